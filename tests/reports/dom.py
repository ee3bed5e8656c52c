"""A small DOM for the report tests: html.parser into a tree of Elements, with lookups by tag,
class, id and attribute, and the text of a subtree. Standard library only."""

from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}


BLOCK = {"div", "p", "table", "tr", "td", "th", "h1", "h2", "h3", "li", "ul", "br", "svg",
         "details", "summary", "text"}


class Element:
    def __init__(self, tag, attrs, parent=None):
        self.tag = tag
        self.attrs = dict(attrs)
        self.parent = parent
        self.children = []  # Elements and strings

    @property
    def classes(self):
        return (self.attrs.get("class") or "").split()

    def iter(self):
        yield self
        for c in self.children:
            if isinstance(c, Element):
                yield from c.iter()

    def find_all(self, tag=None, cls=None, **attrs):
        out = []
        for e in self.iter():
            if tag and e.tag != tag:
                continue
            if cls and cls not in e.classes:
                continue
            if any(e.attrs.get(k.replace("_", "-")) != v for k, v in attrs.items()):
                continue
            out.append(e)
        return out

    def find(self, tag=None, cls=None, **attrs):
        found = self.find_all(tag, cls, **attrs)
        return found[0] if found else None

    def ancestors(self):
        """The enclosing elements, innermost first (the document root last)."""
        p = self.parent
        while p is not None:
            yield p
            p = p.parent

    def inside(self, tag):
        """Whether some enclosing element is a <tag> (e.g. "details": folded away)."""
        return any(a.tag == tag for a in self.ancestors())

    def attr_of(self, tag, name):
        """The `name` attribute of the first <tag> in this subtree (this element included), or
        None when there is no such element or it lacks the attribute."""
        e = self.find(tag)
        return e.attrs.get(name) if e is not None else None

    def text(self, skip=()):
        """The visible text, whitespace collapsed; block elements separate words, inline ones
        (b, span, code, ...) do not. Descendants whose tag is in `skip` (e.g. "svg", "details")
        are left out."""
        parts = []
        for c in self.children:
            if isinstance(c, Element):
                if c.tag in skip:
                    continue
                t = c.text(skip)
                parts.append(" %s " % t if c.tag in BLOCK else t)
            else:
                parts.append(c)
        return " ".join("".join(parts).split())

    def rows(self):
        """A table's rows as lists of cell texts (header rows included)."""
        return [[c.text() for c in tr.children if isinstance(c, Element) and c.tag in ("td", "th")]
                for tr in self.find_all("tr")]

    def data_rows(self):
        """A table's own data rows as lists of their <td> Elements: rows with no <td> (a header)
        and rows of a table nested in a cell are left out."""
        out = []
        for tr in self.find_all("tr"):
            if next((a for a in tr.ancestors() if a.tag == "table"), None) is not self:
                continue
            tds = [c for c in tr.children if isinstance(c, Element) and c.tag == "td"]
            if tds:
                out.append(tds)
        return out


class _Builder(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.cur = self.root

    def handle_starttag(self, tag, attrs):
        e = Element(tag, attrs, self.cur)
        self.cur.children.append(e)
        if tag not in VOID:
            self.cur = e

    def handle_startendtag(self, tag, attrs):
        self.cur.children.append(Element(tag, attrs, self.cur))

    def handle_endtag(self, tag):
        e = self.cur
        while e is not None and e.tag != tag:
            e = e.parent
        if e is not None and e.parent is not None:
            self.cur = e.parent

    def handle_data(self, data):
        self.cur.children.append(data)


def parse(html_text):
    b = _Builder()
    b.feed(html_text)
    b.close()
    return b.root
