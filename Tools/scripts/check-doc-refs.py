#!/usr/bin/env python3
"""Checks that every `<doc:Article>` or `<doc:Article#Heading>` written in a module's Swift sources
(doc comments, plain comments and strings alike) names an article, and a heading of it, in that
module's DocC catalog. DocC itself checks only the doc comments of public symbols; this covers the
internal ones and the `//` comments too, so that a reader of the code can always follow a
reference. Also fails on a `§` reference to a specification section (the specifications are not
part of the repository: the articles are).

Usage: check-doc-refs.py SOURCES_DIR CATALOG_DIR [--extra-sources DIR ...]
The extra sources (for example the code generator that writes a module's generated files) are
checked against the same catalog.
"""
import os
import re
import sys

DOC_LINK = re.compile(r"<doc:([A-Za-z0-9_-]+)(?:#([^>\s]+))?>")


def slug(text):
    return re.sub(r"[^a-z0-9]", "", text.lower())


def catalog_index(catalog):
    articles = {}
    for name in sorted(os.listdir(catalog)):
        if not name.endswith(".md"):
            continue
        with open(os.path.join(catalog, name), encoding="utf-8") as f:
            headings = {slug(m.group(1)) for m in re.finditer(r"^#{2,6}\s+(.+?)\s*$", f.read(), re.M)}
        articles[name[:-3]] = headings
    return articles


def swift_files(root):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.endswith(".docc")]
        for name in sorted(filenames):
            if name.endswith(".swift"):
                yield os.path.join(dirpath, name)


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    sources, catalog = argv[1], argv[2]
    roots = [sources] + [argv[i + 1] for i, a in enumerate(argv) if a == "--extra-sources" and i + 1 < len(argv)]
    articles = catalog_index(catalog)
    problems = []
    for root in roots:
        for path in swift_files(root):
            with open(path, encoding="utf-8") as f:
                for number, line in enumerate(f, 1):
                    for m in DOC_LINK.finditer(line):
                        article, heading = m.group(1), m.group(2)
                        if article not in articles:
                            problems.append(f"{path}:{number}: <doc:{article}> is not an article of {catalog}")
                        elif heading and slug(heading) not in articles[article]:
                            problems.append(f"{path}:{number}: {article} has no heading '{heading}'")
                    if "\u00a7" in line:
                        problems.append(f"{path}:{number}: a \u00a7 reference to a specification; name the article instead")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
