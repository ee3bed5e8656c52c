# Container images (deploy/docker/), checked without building one (ctest label `deploy`):
#   DockerEntrypoint  the entry point with a fake prima on PATH: the model fetch over file://
#                     with its sha256, a mismatch and a missing hash refused, the arguments
#                     prima gets (tests/deploy/entrypoint_test.sh; needs bash, curl, sha256sum)
#   DockerfileStatic  the Dockerfiles' and .dockerignore's invariants, and hadolint where it is
#                     installed (tests/deploy/dockerfile_test.py)
# bench/deploy/image_smoke.sh builds the CPU image and runs it (by hand, not in CI).
# Included at the end of tests/CMakeLists.txt.
find_program(PRIMA_BASH bash)
if(PRIMA_BASH)
  add_test(NAME DockerEntrypoint
           COMMAND ${PRIMA_BASH} ${CMAKE_CURRENT_LIST_DIR}/entrypoint_test.sh
                   ${CMAKE_SOURCE_DIR}/deploy/docker/entrypoint.sh)
  set_tests_properties(DockerEntrypoint PROPERTIES LABELS deploy SKIP_RETURN_CODE 77 TIMEOUT 120)
endif()
find_program(PRIMA_DEPLOY_PYTHON3 python3)
if(PRIMA_DEPLOY_PYTHON3)
  add_test(NAME DockerfileStatic
           COMMAND ${PRIMA_DEPLOY_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/dockerfile_test.py
                   ${CMAKE_SOURCE_DIR})
  set_tests_properties(DockerfileStatic PROPERTIES LABELS deploy TIMEOUT 120)
endif()
