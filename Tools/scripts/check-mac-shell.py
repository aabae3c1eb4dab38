#!/usr/bin/env python3
"""Fails on GNU-only flags in the shell scripts that must run on a Mac (issue 38, item 2).

A Mac has the BSD tools, and these scripts run there: the XCFramework build (Tools/curl-apple) and
the release (Tools/release/release.sh: the Mac that builds the zip is where a Core release is
made). Linux runs them with GNU tools, where every one of the forms below works, so only this scan
sees them. Each rule names the BSD behaviour (FreeBSD / macOS manual pages of sed(1), grep(1),
find(1), date(1), stat(1), head(1), base64(1)):

- `sed -i` without a suffix attached (`-i.bak`): BSD sed takes the next argument as the backup
  suffix (`sed -i -E s/…/` makes `-E` the suffix, leaves `FILE-E` behind, and reads the script as
  basic regex); GNU sed takes `-i ''` as the script. Edit files with Python, or `-i.bak` + `rm`.
- `\\n` in a sed replacement: BSD sed writes a literal `n`.
- sed's long options (`--in-place`, `--regexp-extended`): GNU only.
- `grep -P` (no PCRE in BSD grep), `find … -printf`, `date -d` / `--date`, `stat -c` / `--format`,
  `head -n -N` / `tail` negative counts of GNU, `base64 -w`, `readlink -f` on macOS before 12.3,
  `tac`, `sha256sum` without a `shasum` fallback on the same line.

    Tools/scripts/check-mac-shell.py [FILE...]    exit 1 listing each use (default: MAC_SCRIPTS)

A line scan: comments are dropped, quoted text is kept (a sed script is quoted), and a rule applies
only to a command word at the start of a pipeline stage. Tested by test-check-mac-shell.py.
"""
import pathlib
import re
import shlex
import sys

root = pathlib.Path(__file__).resolve().parents[2]
MAC_SCRIPTS = ["Tools/release/release.sh", "Tools/curl-apple/build.sh", "Tools/curl-apple/lib.sh",
               "Tools/curl-apple/inputs.sh"]


def _sed(args):
    found = []
    for k, a in enumerate(args):
        if re.fullmatch(r"-[A-Za-z]*i", a):
            found.append("sed -i without an attached backup suffix (BSD sed takes the next argument as the suffix)")
        if a.startswith("--"):
            found.append(f"sed {a.split('=')[0]} (GNU only)")
        if re.match(r"s(.).*\1.*\\n.*\1", a) or (k > 0 and args[k - 1] == "-e" and "\\n" in a and a.startswith("s")):
            found.append("\\n in a sed replacement (BSD sed writes a literal n)")
    return found


RULES = {
    "sed": _sed,
    "grep": lambda a: ["grep -P (BSD grep has no PCRE)"] if any(re.fullmatch(r"-[A-Za-z]*P[A-Za-z]*", x) for x in a) else [],
    "find": lambda a: ["find -printf (GNU only)"] if "-printf" in a or "-fprintf" in a else [],
    "date": lambda a: ["date -d (BSD date: -j -f)"] if any(x == "-d" or x.startswith("--date") for x in a) else [],
    "stat": lambda a: ["stat -c (BSD stat: -f)"] if any(x == "-c" or x.startswith("--format") for x in a) else [],
    "head": lambda a: ["head -n -N (GNU only)"] if any(re.fullmatch(r"-n-?\d*", x) and x != "-n" and "-" in x[2:] for x in a)
    or any(a[k] == "-n" and k + 1 < len(a) and a[k + 1].startswith("-") for k in range(len(a))) else [],
    "base64": lambda a: ["base64 -w (GNU only)"] if any(x.startswith("-w") or x.startswith("--wrap") for x in a) else [],
    "readlink": lambda a: ["readlink -f (not before macOS 12.3)"] if "-f" in a else [],
    "tac": lambda a: ["tac (GNU only; tail -r on BSD)"],
}


def _stages(line):
    """Each pipeline stage's words of a command line (comments dropped; `$(…)` opened)."""
    text = re.sub(r"\$\(|`|\(|\)", " ; ", line)
    try:
        words = shlex.split(text, comments=True, posix=True)
    except ValueError:
        words = text.split()
    stage = []
    for w in words + [";"]:
        if w in (";", "|", "||", "&&", "&", "then", "do", "else", "{", "}", "!", "if", "while", "time"):
            if stage:
                yield stage
            stage = []
        else:
            stage.append(w)


def scan(text):
    """(line number, message) for each GNU-only use in a script's text."""
    found = []
    lines = text.split("\n")
    for number, line in enumerate(lines, 1):
        if re.match(r"\s*#", line):
            continue
        for stage in _stages(line):
            # Skip assignments and wrappers before the command word.
            while stage and (re.match(r"^\w+=", stage[0]) or stage[0] in ("env", "command", "exec", "xargs")):
                stage = stage[1:]
            if not stage:
                continue
            cmd, args = pathlib.PurePath(stage[0]).name, stage[1:]
            if cmd == "sha256sum" and "shasum" not in line:
                found.append((number, "sha256sum without a shasum fallback (macOS has shasum -a 256)"))
            for message in RULES.get(cmd, lambda a: [])(args):
                found.append((number, message))
    return found


def sourced(text, directory):
    """The repository's shell scripts a script sources or runs (`. "$here/lib.sh"`, `bash Tools/….sh`),
    as paths relative to the root; `directory` is the script's own, relative to the root."""
    out = set()
    for line in text.split("\n"):
        if re.match(r"\s*#", line):
            continue
        for name in re.findall(r"\$(?:here|dir|script_dir)/([\w.-]+\.(?:sh|env))", line):
            out.add(f"{directory}/{name}")
        for path in re.findall(r"\b(Tools/[\w/.-]+\.sh)\b", line):
            out.add(path)
    return sorted(out)


def main(argv):
    files = argv[1:] or [str(root / p) for p in MAC_SCRIPTS]
    failures = []
    for f in files:
        path = pathlib.Path(f)
        for number, message in scan(path.read_text(encoding="utf-8")):
            failures.append(f"{path.relative_to(root) if path.is_relative_to(root) else path}:{number}: {message}")
    for f in failures:
        print("check-mac-shell:", f, file=sys.stderr)
    print(f"check-mac-shell: {len(files)} scripts that run on macOS, {len(failures)} GNU-only uses")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
