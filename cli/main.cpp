#include <cstdio>
int main() { std::puts("prima: under construction"); return 0; }
