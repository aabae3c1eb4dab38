#!/usr/bin/env python3
"""Fails on Apple-only availability errors that Linux builds never see (issue 27, items 1 and 4).

Linux has no availability checking: a use of `Synchronization.Atomic` in a package whose floors
are iOS 15 / macOS 12 compiles here and stops every Apple build. This scan reads each package's
platform floors from its Package.swift (the example app's from its XcodeGen project.yml) and
flags every use of an API in RULES that is newer than a floor, unless an enclosing `@available`
declaration, an `if #available` / `while #available` block, the rest of a scope after a
`guard #available`, or an `#if` branch that is not compiled on that platform covers it. It also
flags a use of `UIApplication.shared` (unavailable in app extensions, and Xcode compiles packages
extension-safe), of `AppLifecycleMonitor.system()` or of a type the package marks unavailable in
app extensions, outside a declaration marked `@available(iOSApplicationExtension, unavailable)`
(and `macCatalystApplicationExtension`, `tvOSApplicationExtension`, `visionOSApplicationExtension`
where the code is compiled for those platforms).

    Tools/scripts/check-availability.py [ROOT]        exit 1 listing every uncovered use

A source scan, not a compiler: comments and string literals are ignored, `#if` conditions are
evaluated per Apple platform (`os(...)`, `canImport(...)` of a few known modules; anything else
counts as possibly compiled), and a type a package declares itself (its own `Mutex`, say) is not
the standard library's. The requirements in RULES are the `@available` attributes of the Swift
sources that declare them (swiftlang/swift stdlib, swift-experimental-string-processing), with
`SwiftStdlib X.Y` mapped to OS versions by the Swift repository's availability macros
(utils/availability-macros.def): 5.7 = macOS 13, iOS 16, tvOS 16, watchOS 9 (visionOS 1.0);
5.9 = macOS 14, iOS 17, tvOS 17, watchOS 10 (visionOS 1.0); 6.0 = macOS 15, iOS 18, tvOS 18,
watchOS 11, visionOS 2.
"""
import bisect
import pathlib
import re
import sys

PLATFORMS = ("iOS", "macOS", "tvOS", "visionOS", "watchOS")
ALIASES = {"ios": "iOS", "macos": "macOS", "osx": "macOS", "tvos": "tvOS", "visionos": "visionOS",
           "xros": "visionOS", "watchos": "watchOS"}
UNAVAILABLE = (10**6, 0)
# App extensions: `@available(iOSApplicationExtension, unavailable)` and friends, as pseudo-platforms.
EXTENSIONS = {"iosapplicationextension": "ext:iOS", "tvosapplicationextension": "ext:tvOS",
              "visionosapplicationextension": "ext:visionOS", "maccatalystapplicationextension": "ext:macCatalyst",
              "macosapplicationextension": "ext:macOS", "watchosapplicationextension": "ext:watchOS"}
# An app extension of a platform may not reach these: the declaration using one must be marked
# unavailable in that platform's extensions (Mac Catalyst builds are iOS builds).
EXTENSION_NEEDS = {"iOS": ("ext:iOS", "ext:macCatalyst"), "tvOS": ("ext:tvOS",), "visionOS": ("ext:visionOS",)}


def req(macos, ios, tvos, watchos, visionos):
    return {"macOS": macos, "iOS": ios, "tvOS": tvos, "watchOS": watchos, "visionOS": visionos}


STDLIB_5_7 = req((13, 0), (16, 0), (16, 0), (9, 0), (1, 0))
STDLIB_5_9 = req((14, 0), (17, 0), (17, 0), (10, 0), (1, 0))
STDLIB_6_0 = req((15, 0), (18, 0), (18, 0), (11, 0), (2, 0))

# (what, pattern over the comment- and string-free text, requirement, declared by)
RULES = [
    ("Synchronization.Atomic", r"\b(?:Atomic|AtomicLazyReference|AtomicRepresentable|WordPair)\b", STDLIB_6_0,
     "stdlib/public/Synchronization: @available(SwiftStdlib 6.0, *)"),
    ("Synchronization.Mutex", r"\bMutex\b", STDLIB_6_0,
     "stdlib/public/Synchronization/Mutex: @available(SwiftStdlib 6.0, *)"),
    ("task executors", r"\b(?:TaskExecutor|UnownedTaskExecutor|withTaskExecutorPreference|globalConcurrentExecutor"
     r"|asUnownedTaskExecutor)\b|\bexecutorPreference\s*:", STDLIB_6_0,
     "SE-0417, stdlib/public/Concurrency: @available(SwiftStdlib 6.0, *)"),
    ("ExecutorJob", r"\bExecutorJob\b", STDLIB_5_9, "stdlib/public/Concurrency: @available(SwiftStdlib 5.9, *)"),
    ("Task.sleep(for:) / Task.sleep(until:)", r"\bTask\s*\.\s*sleep\s*\(\s*(?:for|until)\s*:", STDLIB_5_7,
     "stdlib/public/Concurrency/TaskSleepDuration.swift: @available(SwiftStdlib 5.7, *)"),
    ("Clock, Duration", r"\b(?:ContinuousClock|SuspendingClock|Duration)\b", STDLIB_5_7,
     "SE-0329, stdlib/public/Concurrency: @available(SwiftStdlib 5.7, *)"),
    ("Regex", r"\b(?:Regex|RegexComponent|RegexBuilder)\b", STDLIB_5_7,
     "swift-experimental-string-processing: @available(SwiftStdlib 5.7, *)"),
    ("string processing algorithms",
     r"\.\s*(?:wholeMatch|prefixMatch|trimmingPrefix|replacing)\s*\(|\.\s*(?:firstMatch|matches|ranges|firstRange)\s*\(\s*of\s*:",
     STDLIB_5_7, "swift-experimental-string-processing Algorithms: @available(SwiftStdlib 5.7, *)"),
]
# Foundation API that exists on macOS (and in swift-corelibs-foundation on Linux) but not on iOS,
# tvOS, visionOS or watchOS (issue 38, item 1). Apple's documentation pages (availability
# metadata): `Process` (`NSTask`) "macCatalyst 13.0, macOS 10.0" only; `Host` (`NSHost`) "macOS
# 10.0" only; Apple's NSTask.h: `API_AVAILABLE(macos(10.6)) API_UNAVAILABLE(ios, watchos, tvos)`.
# `Pipe` is not one of them: its page lists iOS 2.0, tvOS 9.0, visionOS 1.0, watchOS 2.0. Test
# targets are scanned too (every .swift file of a package but fixtures): the Apple CI runs them on
# the simulators.
MACOS_ONLY = req((0, 0), UNAVAILABLE, UNAVAILABLE, UNAVAILABLE, UNAVAILABLE)
RULES.append(("macOS-only Foundation (Process, NSTask, Host, NSHost)", r"\b(?:Process|NSTask|Host|NSHost)\b",
              MACOS_ONLY, "developer.apple.com/documentation/foundation/process and /host: macOS (and Catalyst) only"))
# Names app extensions may not use (UIKit marks `UIApplication.shared` unavailable there: Xcode
# compiles packages extension-safe); the types a package marks so are added per package.
EXTENSION_RULES = [
    ("UIApplication.shared", r"\bUIApplication\s*\.\s*shared\b"),
    ("AppLifecycleMonitor.system()", r"\bAppLifecycleMonitor\s*\.\s*system\s*\("),
]
EXTENSION_MARKED = re.compile(
    r"@available\(\s*iOSApplicationExtension\s*,\s*unavailable\s*\)(?:\s*@\w+(?:\([^)]*\))?)*\s*"
    r"(?:(?:public|internal|open|final|private|fileprivate|package)\s+)*(?:class|struct|enum|actor)\s+([A-Z]\w*)")
# Main-actor-isolated names (issue 38, item 5): `UIApplication` and `NSApplication` are
# `@MainActor` classes in current SDKs, so their static notification names are isolated too, and
# recent SDKs report a use outside the main actor as an error under Swift 6. A use must be in
# main-actor code: inside a declaration marked `@MainActor` or a `MainActor.assumeIsolated { }` /
# `MainActor.run { }` body (a scan: a closure nested there counts as covered), or the name must
# be built from its string (`Notification.Name("...")`).
MAIN_ACTOR = "main actor"
MAIN_ACTOR_RULES = [
    ("UIKit/AppKit application notification names", r"\b(?:UIApplication|NSApplication)\s*\.\s*\w+Notification\b"),
]
MAIN_ACTOR_BODY = re.compile(r"MainActor\s*\.\s*(?:assumeIsolated|run)\b")
REGEX_LITERAL = ("regex literal", STDLIB_5_7, "SE-0354 regex literals produce Regex: @available(SwiftStdlib 5.7, *)")
COMPILED = [(what, re.compile(pattern), need, source) for what, pattern, need, source in RULES]
DECLARED = re.compile(r"\b(?:class|struct|enum|actor|protocol|typealias)\s+([A-Z]\w*)")
HASH_SLASH = re.compile(r"#+/")
HASH_QUOTE = re.compile(r"#+\"")
HASHES = re.compile(r"#+")
KEYWORD = re.compile(r"(if|guard|while|else)\b")
AVAILABLE = re.compile(r"#(un)?available\s*\(")
ATTRIBUTE = re.compile(r"@\w+\s*")


def version(text):
    parts = [int(p) for p in re.findall(r"\d+", text)[:2]]
    return tuple(parts + [0] * (2 - len(parts)))


# --- package floors ---------------------------------------------------------------------------

def package_floors(manifest_text):
    """Platform floors from `platforms: [.iOS(.v15), .macOS("12.3"), ...]`; None when absent."""
    m = re.search(r"platforms\s*:\s*\[(.*?)\]", manifest_text, re.S)
    if not m:
        return None
    floors = {}
    for name, arg in re.findall(r"\.(iOS|macOS|tvOS|visionOS|watchOS)\s*\(\s*([^)]*)\)", m.group(1)):
        floors[name] = version(arg.replace("_", "."))
    return floors


def project_floors(project_yml):
    """`deploymentTarget:` of an XcodeGen spec (`iOS: "15.0"`)."""
    m = re.search(r"deploymentTarget:\s*\n((?:[ \t]+\w+:\s*\"?[\d.]+\"?\s*\n)+)", project_yml)
    if not m:
        return None
    found = re.findall(r"(\w+):\s*\"?([\d.]+)", m.group(1))
    return {ALIASES[k.lower()]: version(v) for k, v in found if k.lower() in ALIASES}


# --- lexing -----------------------------------------------------------------------------------

def strip(source):
    """The source with comments and string literal contents blanked (newlines kept), and the
    offsets of regex literals (`#/.../#`, and `/.../` where an operand is expected)."""
    out = list(source)
    regexes = []
    i, n = 0, len(source)

    def blank(a, b):
        for k in range(a, min(b, n)):
            if out[k] != "\n":
                out[k] = " "

    def prev_significant(k):
        k -= 1
        while k >= 0 and out[k] in " \t":
            k -= 1
        return k

    while i < n:
        c = source[i]
        if source.startswith("//", i):
            j = source.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif source.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if source.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif source.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            i = j
        elif c == "#" and HASH_SLASH.match(source, i):
            hashes = len(HASHES.match(source, i).group(0))
            close = "/" + "#" * hashes
            j = source.find(close, i + hashes + 1)
            j = n if j < 0 else j + len(close)
            regexes.append(i)
            blank(i, j)
            i = j
        elif (c == "#" and HASH_QUOTE.match(source, i)) or c == '"':
            hashes = len(HASHES.match(source, i).group(0)) if c == "#" else 0
            start = i + hashes
            multi = source.startswith('"""', start)
            quote = '"""' if multi else '"'
            close = quote + "#" * hashes
            j = start + len(quote)
            while j < n and not source.startswith(close, j):
                if source[j] == "\\" and hashes == 0:
                    j += 1
                elif source[j] == "\n" and not multi:
                    break
                j += 1
            j = min(n, j + len(close))
            blank(i, j)
            i = j
        elif c == "/" and i + 1 < n and source[i + 1] not in " \t\n=/*":
            # A `/` where an operand is expected starts a bare regex literal (Swift 6 mode).
            p = prev_significant(i)
            word = re.search(r"(\w+)$", "".join(out[max(0, p - 10):p + 1])) if p >= 0 else None
            operand = p < 0 or out[p] in "([{,=:;!&|?" or (word and word.group(1) in ("return", "case", "in", "try", "await"))
            end = source.find("\n", i)
            end = n if end < 0 else end
            j = source.find("/", i + 1, end)
            if operand and j > 0:
                regexes.append(i)
                blank(i, j + 1)
                i = j + 1
            else:
                i += 1
        else:
            i += 1
    return "".join(out), regexes


# --- #if ---------------------------------------------------------------------------------------

UIKIT = {"iOS", "tvOS", "visionOS"}
KNOWN_MODULES = {
    "UIKit": UIKIT, "AppKit": {"macOS"}, "WatchKit": {"watchOS"}, "Darwin": set(PLATFORMS),
    "Glibc": set(), "Musl": set(), "WinSDK": set(), "Android": set(), "Bionic": set(),
}


def eval_condition(cond, platform):
    """True, False or None (unknown) for `#if cond` on `platform`."""
    tokens = re.findall(r"!|&&|\|\||\(|\)|\w+\s*\([^()]*\)|\w+", cond)
    pos = 0

    def atom():
        nonlocal pos
        t = tokens[pos]
        pos += 1
        if t == "!":
            v = atom()
            return None if v is None else not v
        if t == "(":
            v = disj()
            pos += 1  # ")"
            return v
        m = re.match(r"(\w+)\s*\(\s*([^()]*?)\s*\)", t)
        if m:
            fn, arg = m.group(1), m.group(2)
            if fn == "os":
                return ALIASES.get(arg.lower()) == platform
            if fn == "canImport":
                mods = KNOWN_MODULES.get(arg.split(",")[0].strip())
                return None if mods is None else platform in mods
            return None
        return {"true": True, "false": False}.get(t)

    def conj():
        nonlocal pos
        v = atom()
        while pos < len(tokens) and tokens[pos] == "&&":
            pos += 1
            w = atom()
            v = False if v is False or w is False else (None if v is None or w is None else True)
        return v

    def disj():
        nonlocal pos
        v = conj()
        while pos < len(tokens) and tokens[pos] == "||":
            pos += 1
            w = conj()
            v = True if v is True or w is True else (None if v is None or w is None else False)
        return v

    try:
        return disj()
    except IndexError:
        return None


def active_platforms_by_line(lines, platforms):
    """For each line, the platforms (of `platforms`) on which it may be compiled."""
    stack = []  # per #if: (parent set, set of platforms where an earlier branch surely matched, current set)
    current = set(platforms)
    result = []
    for line in lines:
        s = line.strip()
        m = re.match(r"#(if|elseif|else|endif)\b(.*)", s)
        if not m:
            result.append(current)
            continue
        kind, cond = m.group(1), m.group(2).strip()
        result.append(set())
        if kind == "if":
            parent = current
            taken = {p for p in parent if eval_condition(cond, p) is True}
            current = {p for p in parent if eval_condition(cond, p) is not False}
            stack.append([parent, taken])
        elif kind == "elseif" and stack:
            parent, taken = stack[-1]
            current = {p for p in parent - taken if eval_condition(cond, p) is not False}
            stack[-1][1] = taken | {p for p in parent if eval_condition(cond, p) is True}
        elif kind == "else" and stack:
            parent, taken = stack[-1]
            current = parent - taken
        elif kind == "endif" and stack:
            current = stack.pop()[0]
    return result


# --- availability gates ------------------------------------------------------------------------

def parse_spec(args, attribute):
    """Coverage of `@available(...)` / `#available(...)` arguments: platform -> version, with
    UNAVAILABLE for a platform the declaration is not compiled for."""
    cov = {}
    items = [a.strip() for a in args.split(",")]
    head = items[0] if items else ""
    if attribute and len(items) > 1 and re.fullmatch(r"\w+|\*", head):
        # Long form: @available(iOS, introduced: 18.0) / @available(*, unavailable).
        rest = ",".join(items[1:])
        names = PLATFORMS if head == "*" else [ALIASES.get(head.lower()) or EXTENSIONS.get(head.lower())]
        if re.search(r"\bunavailable\b", rest):
            for p in names:
                if p:
                    cov[p] = UNAVAILABLE
        m = re.search(r"introduced\s*:\s*([\d.]+)", rest)
        if m and names[0] and head != "*":
            cov[names[0]] = version(m.group(1))
        return cov
    for item in items:
        m = re.fullmatch(r"(\w+)\s+([\d.]+)", item)
        if m and ALIASES.get(m.group(1).lower()):
            cov[ALIASES[m.group(1).lower()]] = version(m.group(2))
    return cov


def merged(a, b):
    out = dict(a)
    for p, v in b.items():
        out[p] = max(out.get(p, (0, 0)), v)
    return out


def balanced_args(text, open_paren):
    depth, j = 0, open_paren
    while j < len(text):
        if text[j] == "(":
            depth += 1
        elif text[j] == ")":
            depth -= 1
            if depth == 0:
                return text[open_paren + 1:j], j + 1
        j += 1
    return text[open_paren + 1:], len(text)


def rule_names():
    """The name (`what`) of every rule the scan applies, in every table: `skip` takes these."""
    return [r[0] for r in RULES] + [REGEX_LITERAL[0]] + [r[0] for r in EXTENSION_RULES] + [r[0] for r in MAIN_ACTOR_RULES]


def scan_source(source, floors, local_types=frozenset(), path="<source>", extension_unsafe=frozenset(),
                skip=frozenset()):
    """Every uncovered use in `source`: (line, what, platforms, source) tuples. `extension_unsafe`:
    type names the package marks unavailable in app extensions. `skip`: rule names left out (the
    tests remove each rule in turn and expect the fixture's result to change)."""
    text, regexes = strip(source)
    lines = text.split("\n")
    line_starts = [0]
    for line in lines:
        line_starts.append(line_starts[-1] + len(line) + 1)
    active = active_platforms_by_line(lines, floors.keys())
    # Lines of inactive branches and directives take no part in the structure.
    chars = list(text)
    for k, line in enumerate(lines):
        if not active[k]:
            for x in range(line_starts[k], line_starts[k] + len(line)):
                chars[x] = " "
    text = "".join(chars)

    uses = []  # (offset, what, need, source)
    for what, rx, need, src in COMPILED:
        if what in skip:
            continue
        for m in rx.finditer(text):
            name = m.group(0).split("(")[0].strip(". \t")
            if name in local_types:
                continue
            uses.append((m.start(), what, need, src))
    def line_of(off):
        return bisect.bisect_right(line_starts, off) - 1

    for off in regexes:
        line = line_of(off)
        if active[line] and REGEX_LITERAL[0] not in skip:
            uses.append((off, *REGEX_LITERAL))
    ext_rules = [r for r in EXTENSION_RULES if r[0] not in skip] + [(n, r"\b" + re.escape(n) + r"\b") for n in sorted(extension_unsafe)]
    for what, pattern in ext_rules:
        for m in re.finditer(pattern, text):
            uses.append((m.start(), what, None, "unavailable in app extensions"))
    for what, pattern in MAIN_ACTOR_RULES:
        if what in skip:
            continue
        for m in re.finditer(pattern, text):
            uses.append((m.start(), what, MAIN_ACTOR, "isolated to the main actor"))
    uses.sort(key=lambda u: u[0])

    # Walk the structure, recording the coverage in force at each use.
    coverage_at = {}
    scopes = [{"cov": {}, "kind": None, "stmt": None}]
    attr = None  # coverage of pending @available attributes, and whether their declaration began
    attr_started = False
    stmt = None  # {"kind": if/guard/while, "cov": ..., "uncov": ...}
    pending_else = None
    paren = 0
    use_iter = iter(uses)
    next_use = next(use_iter, None)
    i, n = 0, len(text)
    while i < n:
        while next_use is not None and next_use[0] <= i:
            cov = scopes[-1]["cov"]
            if attr is not None:
                cov = merged(cov, attr)
            coverage_at[next_use[0]] = cov
            next_use = next(use_iter, None)
        c = text[i]
        if c == "@" and text.startswith("@available", i):
            j = text.find("(", i)
            args, end = balanced_args(text, j)
            attr = merged(attr or {}, parse_spec(args, attribute=True))
            attr_started = False
            i = end
            continue
        if c == "#" and AVAILABLE.match(text, i):
            j = text.find("(", i)
            args, end = balanced_args(text, j)
            spec = parse_spec(args, attribute=False)
            if stmt is not None:
                key = "uncov" if text.startswith("#unavailable", i) else "cov"
                stmt[key] = merged(stmt[key], spec)
            i = end
            continue
        if c == "@" and re.match(r"@MainActor\b", text[i:i + 11]):
            attr = merged(attr or {}, {MAIN_ACTOR: UNAVAILABLE})
            attr_started = False
            i += len("@MainActor")
            continue
        if c == "M" and MAIN_ACTOR_BODY.match(text, i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            # The closure that follows runs on the main actor: like an `if #available` body.
            stmt = {"kind": "if", "cov": {MAIN_ACTOR: UNAVAILABLE}, "uncov": {}}
            i = MAIN_ACTOR_BODY.match(text, i).end()
            continue
        if c == "@":
            # Another attribute (`@discardableResult`, `@Sendable`...): not yet the declaration.
            end = ATTRIBUTE.match(text, i).end()
            if end < n and text[end] == "(":
                end = balanced_args(text, end)[1]
            i = end
            continue
        m = KEYWORD.match(text, i) if c in "igwe" and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] in "_.#@")) else None
        if m and paren == 0:
            word = m.group(1)
            if word == "else":
                if pending_else is not None:
                    stmt = {"kind": "else", "cov": pending_else, "uncov": {}}
                pending_else = None
            else:
                stmt = {"kind": word, "cov": {}, "uncov": {}}
                pending_else = None
            if attr is not None:
                attr_started = True
            i += len(word)
            continue
        if c in "([":
            paren += 1
        elif c in ")]":
            paren = max(0, paren - 1)
        elif c == "{":
            cov = scopes[-1]["cov"]
            if attr is not None:
                cov = merged(cov, attr)
            kind = None
            if paren == 0 and stmt is not None:
                kind = stmt
                if stmt["kind"] in ("if", "while", "else"):
                    cov = merged(cov, stmt["cov"])
                stmt = None
            if paren == 0 and attr is not None:
                attr = None
            scopes.append({"cov": cov, "kind": kind, "saved_paren": paren})
            paren = 0
        elif c == "}":
            if len(scopes) > 1:
                closed = scopes.pop()
                paren = closed.get("saved_paren", 0)
                k = closed["kind"]
                if k is not None and k["kind"] == "guard":
                    scopes[-1]["cov"] = merged(scopes[-1]["cov"], k["cov"])
                if k is not None and k["kind"] == "if" and k["uncov"]:
                    pending_else = k["uncov"]
        elif c == "\n":
            if paren == 0 and attr is not None and attr_started:
                attr = None
        elif not c.isspace() and attr is not None:
            attr_started = True
        if c not in " \t\n" and c != "}" and pending_else is not None and not text.startswith("else", i):
            pending_else = None
        i += 1
    while next_use is not None:
        coverage_at[next_use[0]] = scopes[-1]["cov"]
        next_use = next(use_iter, None)

    problems = []
    for off, what, need, src in uses:
        line = line_of(off)
        cov = coverage_at.get(off, {})
        short = []
        if need == MAIN_ACTOR:
            if active[line] and cov.get(MAIN_ACTOR) != UNAVAILABLE:
                problems.append((line + 1, what, ["main-actor code"], src))
            continue
        if need is None:
            for p in sorted(active[line]):
                for ext in EXTENSION_NEEDS.get(p, ()):
                    if cov.get(ext) != UNAVAILABLE:
                        short.append("@available(%sApplicationExtension, unavailable)" % ext[4:])
            if short:
                problems.append((line + 1, what, short, src))
            continue
        for p in sorted(active[line]):
            have = max(floors[p], cov.get(p, (0, 0)))
            if have < need[p]:
                short.append(f"{p} (unavailable there)" if need[p] == UNAVAILABLE else f"{p} {need[p][0]}.{need[p][1]}")
        if short:
            problems.append((line + 1, what, short, src))
    return problems


# --- the repository ----------------------------------------------------------------------------

def packages(root):
    """(directory, floors) of every package (Package.swift with platforms) and XcodeGen project."""
    out = []
    for manifest in sorted(root.glob("**/Package.swift")):
        if any(part.startswith(".build") or part == ".git" for part in manifest.parts):
            continue
        floors = package_floors(manifest.read_text(encoding="utf-8"))
        out.append((manifest.parent, floors if floors is not None else {p: (0, 0) for p in PLATFORMS}))
    for spec in sorted(root.glob("Examples/**/project.yml")):
        floors = project_floors(spec.read_text(encoding="utf-8"))
        if floors:
            out.append((spec.parent, floors))
    return out


def swift_files(directory, nested):
    for path in sorted(directory.rglob("*.swift")):
        rel = path.relative_to(directory).parts
        if path.name == "Package.swift" or any(p.startswith(".build") or p == "fixtures" for p in rel):
            continue
        if any(d != directory and d in path.parents for d in nested):
            continue
        yield path


def main(argv):
    root = pathlib.Path(argv[1] if len(argv) > 1 else pathlib.Path(__file__).resolve().parents[2])
    pkgs = packages(root)
    dirs = [d for d, _ in pkgs]
    failures, files = [], 0
    for directory, floors in pkgs:
        sources = list(swift_files(directory, dirs))
        local = set()
        texts = {}
        unsafe = set()
        for path in sources:
            texts[path] = path.read_text(encoding="utf-8")
            stripped = strip(texts[path])[0]
            local |= set(DECLARED.findall(stripped))
            unsafe |= set(EXTENSION_MARKED.findall(stripped))
        for path in sources:
            files += 1
            found = scan_source(texts[path], floors, frozenset(local), str(path), frozenset(unsafe))
            for line, what, short, src in found:
                rel = path.relative_to(root)
                if src == "isolated to the main actor":
                    failures.append(f"{rel}:{line}: {what} are isolated to the main actor (an error under Swift 6 "
                                    f"with recent SDKs): use them in @MainActor code or MainActor.assumeIsolated, "
                                    f"or build the name from its string")
                    continue
                if src == "unavailable in app extensions":
                    failures.append(f"{rel}:{line}: {what} is unavailable in app extensions; mark the declaration that "
                                    f"uses it {', '.join(short)} (and its callers), or reach it without naming it")
                    continue
                failures.append(f"{rel}:{line}: {what} needs {', '.join(short)} ({src}); the package's floors are "
                                + ", ".join(f"{p} {v[0]}.{v[1]}" for p, v in sorted(floors.items()))
                                + ": gate it with @available / #available, or use what the floors have")
    for f in failures:
        print("check-availability:", f, file=sys.stderr)
    print(f"check-availability: {files} files in {len(pkgs)} packages, {len(failures)} uncovered uses")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
