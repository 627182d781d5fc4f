#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check-docs.py: the user docs (README.md, docs/**/*.md) checked against the built programs.

1. Console examples. Every fenced ```console block is run, in document order, one scratch
   directory per document (the convention is in docs/internals/testing.md, "The docs are
   checked"):
   - `$ COMMAND` lines are run with bash (a line ending in a backslash continues); the lines
     after a command, up to the next `$ `, are its expected output, stdout and stderr
     together. A command without output lines is run, its output not compared.
   - `...` alone on a line stands for any number of lines; `...` inside a line for any text.
     Times (2026-11-30T09:30:32.547Z, 2026-11-30 10:00:01 +0100) and the port of
     127.0.0.1:PORT stand for any time and port.
   - The exit status must be 0, or N when the command ends with the comment `# exit N`.
   - `<!-- check: skip REASON -->` on the line before a block: not run (listed with -v).
     `<!-- check: file NAME -->` before any block writes its text to NAME in the scratch
     directory, for the examples after it.
   - A `$ trainyard ...` (or trainyardd) line in a block that is not run is a problem: make the
     block ```console, or mark it skipped with the reason (a `$ ` line indented is output).
   - The scratch directory holds `build` and `examples` (links to the build and source
     trees); PATH starts with build/bin and build/examples/digits; TRAINYARD_HOME and HOME are
     private; /tmp/ in commands and output is the scratch directory's tmp/. The service is the
     doc's own `trainyardd ... &` line (on a free port), else a throwaway trainyardd started
     for the first example that needs one: TRAINYARD_API_ENDPOINT names it, and
     `localhost:8080` and `127.0.0.1:8080` in commands are replaced by its address.
2. Flags. Every `trainyard VERB ... --flag` (and `trainyardd --flag`) named in the docs, in
   code spans and code blocks, and in any verb's --help, must be a flag of that verb (its
   --help); a flag table row in a section of docs/cli.md whose heading names a verb must be
   that verb's (a flag its --help does not list is the verb's when the verb does not call it
   unknown). Every flag in a verb's --help must appear in docs/cli.md, and every flag of
   `trainyardd --help` in docs/service.md. Files a --help names and the docs' relative links
   must exist.
3. Stale statements. No paragraph of the docs (its lines joined, so a phrase broken over two
   lines is found) and no --help says that a feature is missing or still to come ("not
   implemented", "does not run yet", "runtimes to come", "will be added", "a planned
   runtime", ...: STALE; code spans and "quoted text" are quotations, not read), unless the
   line before the paragraph is `<!-- check: not-yet REASON -->`.

Each problem is printed as FILE:LINE: MESSAGE (the doc line that is wrong); exit 1 if any.
Usage: check-docs.py --build-dir BUILD [--source-dir SRC] [--only examples|flags] [-v] [FILE.md...]
(--only flags: the checks of 2. and 3., which run no example)
"""
import argparse
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

problems = []


def relname(path, src):
    rel = os.path.relpath(path, src)
    return path if rel.startswith("..") else rel


def problem(where, msg):
    problems.append(f"{where}: {msg}")


# ---------------------------------------------------------------- Markdown reading


class Block:
    def __init__(self, path, line, info, directive):
        self.path, self.line, self.info, self.directive = path, line, info, directive
        self.lines = []  # (line number, text without the fence's indentation)


def read_doc(path):
    """The doc's lines and its fenced blocks (with the check directive before each)."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    blocks, cur, indent, prev = [], None, 0, ""
    for n, text in enumerate(lines, 1):
        m = re.match(r"^( *)```\s*(\S*)", text)
        if cur is None and m:
            d = re.match(r"^\s*<!--\s*check:\s*(.*?)\s*-->\s*$", prev)
            cur = Block(path, n, m.group(2), d.group(1) if d else None)
            indent = len(m.group(1))
        elif cur is not None and re.match(r"^ *```\s*$", text):
            blocks.append(cur)
            cur = None
        elif cur is not None:
            if m:  # CommonMark: a closing fence carries no text, so this one closes nothing
                problem(f"{path}:{n}", "text after a code fence inside a fenced block "
                        f"(opened at line {cur.line}): a closing fence stands alone on its line")
            cur.lines.append((n, text[indent:] if text[:indent].strip() == "" else text))
        if text.strip():
            prev = text
    if cur is not None:
        problem(f"{path}:{cur.line}", "fenced block never closed")
    return lines, blocks


def code_lines(lines, blocks):
    """(line number, text) of command-like text: code spans outside blocks, block lines."""
    in_block = {}
    for b in blocks:
        for n, t in b.lines:
            in_block[n] = t
    out, n = [], 0
    while n < len(lines):
        n += 1
        if n in in_block:
            text, first = in_block[n], n
            while text.endswith("\\") and n + 1 in in_block:  # a continued command
                n += 1
                text = text[:-1] + " " + in_block[n].strip()
            out.append((first, re.sub(r"^\s*\$ ", "", text)))
            continue
        for span in re.findall(r"`([^`]+)`", lines[n - 1]):
            out.append((n, span))
    return out


# ---------------------------------------------------------------- the programs' flags


def run_help(argv):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    return p.stdout + p.stderr


def help_flags(text):
    """Flags a --help text defines: the --name tokens leading its flag-column lines."""
    flags = set()
    for line in text.split("\n"):
        m = re.match(r"^ {2,4}(?:-[a-zA-Z], )?(--\S.*)$", line)
        if not m:
            continue
        for tok in m.group(1).split():
            fm = re.match(r"^(--[a-z][a-z0-9-]*)", tok)
            if not fm:
                break
            flags.add(fm.group(1))
    return flags


class Programs:
    def __init__(self, bindir):
        self.ty = os.path.join(bindir, "trainyard")
        self.tyd = os.path.join(bindir, "trainyardd")
        top = run_help([self.ty, "--help"])
        self.verbs = {}  # "jobs list" -> set of flags
        self.helps = {}  # "jobs list" -> its --help text
        for line in top.split("\n"):
            m = re.match(r"^  (\S.*?)\s{2,}\S", line)
            if m:
                verb = m.group(1)
                self.helps[verb] = run_help([self.ty] + verb.split() + ["--help"])
                self.verbs[verb] = help_flags(self.helps[verb])
        self.top_flags = {"--help", "--version"}
        self.groups = {" ".join(v.split()[:i]) for v in self.verbs for i in range(1, len(v.split()))}
        self.daemon_help = run_help([self.tyd, "--help"])
        self.daemon_flags = help_flags(self.daemon_help)
        self.probed = {}  # (verb, flag) -> whether the verb takes the flag (has_flag)


# ---------------------------------------------------------------- flag mentions

MENTION = re.compile(r"(?:^|(?<=[\s/'\"(`]))(trainyardd?)(?=\s|$)")
FLAG = re.compile(r"^\[?(--[a-z][a-z0-9-]*)")


def split_words(text):
    try:
        lex = shlex.shlex(text, posix=True, punctuation_chars=";&|")
        lex.whitespace_split = True
        lex.commenters = "#"
        return list(lex)
    except ValueError:  # an unbalanced quote (a quoted command in prose): without quotes
        return split_words(re.sub(r"['\"]", " ", text))


def resolve(words, progs):
    """The verbs that @words (after `trainyard`) name, and the words after them: ["jobs list"]
    for `jobs list ...`, three for `jobs list|describe|stream-logs ...`, [""] for `--help`,
    a group for `jobs --help`; None when they name no command."""
    for verb in sorted(progs.verbs, key=lambda v: -len(v.split())):
        k = len(verb.split())
        if words[:k] != verb.split():
            continue
        owners, rest, group = [verb], words[k:], verb.rsplit(" ", 1)[0] if k > 1 else ""
        while len(rest) > 1 and rest[0] == "|" and f"{group} {rest[1]}".strip() in progs.verbs:
            owners.append(f"{group} {rest[1]}".strip())  # VERB|VERB|VERB: each of them
            rest = rest[2:]
        return owners, rest
    k = 0
    while k < len(words) and " ".join(words[: k + 1]) in progs.groups:
        k += 1
    if k == 0 and words[:1] and words[0].startswith("-"):
        return [""], words  # trainyard --help / --version
    if k > 0:
        return [" ".join(words[:k])], words[k:]
    return None  # not a command we know (GROUP VERB, an unknown verb)


def mentions(text, progs):
    """[(owners, flag)] for each flag named with trainyard VERB / trainyardd in @text, and the
    spans (start, end) of @text the mentions cover."""
    out, spans = [], []
    for m in MENTION.finditer(text):
        eol = text.find("\n", m.end())
        words = split_words(text[m.end():eol if eol >= 0 else len(text)])
        if m.group(1) == "trainyardd":
            owners, rest = ["trainyardd"], words
        else:
            got = resolve(words, progs)
            if got is None:
                continue
            owners, rest = got
        depth = 0  # inside [...] of a synopsis, | separates alternatives
        end = m.end()
        for i, w in enumerate(rest):
            if w in ("--", "[--", ";", "&&", "||", "&") or w.startswith("#"):
                break
            if w == "|" and depth <= 0 and not (i + 1 < len(rest) and FLAG.match(rest[i + 1])):
                break
            depth += w.count("[") - w.count("]")
            if re.match(r"^trainyardd?$|/trainyardd?$", w):
                break  # the next mention starts here
            fm = FLAG.match(w)
            if fm:
                out.append((owners, fm.group(1)))
                at = text.find(fm.group(1), end)
                end = at + len(fm.group(1)) if at >= 0 else end
        spans.append((m.start(), end))
    return out, spans


def flags_of(owner, progs):
    if owner == "trainyardd":
        return progs.daemon_flags
    if owner == "":
        return progs.top_flags
    if owner in progs.verbs:
        return progs.verbs[owner]
    return {"--help"}  # a group


def has_flag(owner, flag, progs):
    """Whether @owner has @flag: its --help lists it, or (a flag it takes without listing it,
    such as gcloud's python-package flags, refused with a reason) it does not call it unknown
    when given with --help, which makes the verb print its help instead of acting."""
    if flag in flags_of(owner, progs):
        return True
    if owner not in progs.verbs and owner != "trainyardd":
        return False
    key = (owner, flag)
    if key not in progs.probed:
        argv = [progs.tyd] if owner == "trainyardd" else [progs.ty] + owner.split()
        env = dict(os.environ, TRAINYARD_API_ENDPOINT="http://127.0.0.1:9",
                   TRAINYARD_HOME=tempfile.gettempdir() + "/trainyard-docs-probe-none")
        p = subprocess.run(argv + [flag + "=probe", "--help"], capture_output=True, text=True,
                           timeout=10, env=env, stdin=subprocess.DEVNULL)
        progs.probed[key] = not re.search(r"unknown (flag|option)|unrecognized option",
                                          p.stdout + p.stderr)
    return progs.probed[key]


def owner_name(owner):
    return owner if owner == "trainyardd" else " ".join(["trainyard"] + ([owner] if owner else []))


def check_mentions(where, text, progs):
    text = text.split("ERROR: (")[0]  # a message quoted from a program is its own text
    for owners, flag in mentions(text, progs)[0]:
        for owner in owners:
            if not has_flag(owner, flag, progs):
                problem(where, f"'{owner_name(owner)} {flag}': {owner_name(owner)} has no flag "
                        f"{flag} (see {owner_name(owner)} --help)")


def heading_verb(heading, progs):
    """The verb a docs/cli.md heading names (the longest), or None."""
    best = None
    for verb in progs.verbs:
        if re.search(r"(?:^|[\s`])" + re.escape(verb) + r"(?=$|[\s`:])", heading):
            if best is None or len(verb) > len(best):
                best = verb
    return best


def check_flags(docs, src, progs):
    for path in docs:
        lines, blocks = read_doc(path)
        rel = relname(path, src)
        for n, text in code_lines(lines, blocks):
            check_mentions(f"{rel}:{n}", text, progs)
        if os.path.basename(path) != "cli.md":
            continue
        verb = None
        for n, text in enumerate(lines, 1):
            if text.startswith("#"):
                verb = heading_verb(text, progs)
            elif verb and text.startswith("|"):
                cell = text.split("|")[1]
                for flag in re.findall(r"`(--[a-z][a-z0-9-]*)", cell):
                    if flag not in progs.verbs[verb]:
                        problem(f"{rel}:{n}", f"'{flag}' is in the flags of 'trainyard {verb}' "
                                "(the section's heading), which has no such flag")
    cli = os.path.join(src, "docs", "cli.md")
    service = os.path.join(src, "docs", "service.md")
    documented = {p: set(re.findall(r"--[a-z][a-z0-9-]*", open(p, encoding="utf-8").read()))
                  for p in (cli, service) if os.path.exists(p)}
    if service in documented:  # its options table names them without the dashes
        for row in open(service, encoding="utf-8"):
            if row.startswith("| `"):
                documented[service] |= {"--" + o for o in re.findall(r"`([a-z][a-z0-9-]*)`", row.split("|")[1])}
    for verb, flags in sorted(progs.verbs.items()):
        for flag in sorted(flags - documented.get(cli, set())):
            problem(f"trainyard {verb} --help", f"{flag} is not documented in docs/cli.md")
    for flag in sorted(progs.daemon_flags - documented.get(service, set())):
        problem("trainyardd --help", f"{flag} is not documented in docs/service.md")


def check_help_texts(progs):
    """A flag a verb's --help names, outside a `trainyard OTHER ...` mention, is its own; a
    mention's flags are the named verb's (a mention may be wrapped onto the next line)."""
    for verb, text in progs.helps.items():
        # One line at a time, but a quoted command wrapped onto the next line is one.
        joined = re.sub(r"(?m)^([^'\n]*'[^'\n]*)\n\s*", r"\1 ", text)
        found, spans = mentions(joined, progs)
        for owners, flag in found:
            for owner in owners:
                if not has_flag(owner, flag, progs):
                    problem(f"trainyard {verb} --help", f"names '{owner_name(owner)} {flag}', "
                            f"which {owner_name(owner)} does not have")
        for a, b in reversed(spans):
            joined = joined[:a] + " " + joined[b:]
        for m in re.finditer(r"(?<![\w-])--[a-z][a-z0-9-]*", joined):
            if not has_flag(verb, m.group(0), progs):
                context = joined[max(0, m.start() - 40):m.end() + 20]
                problem(f"trainyard {verb} --help", f"names {m.group(0)}, not a flag of this "
                        f"verb: '...{context}...'")


PATH_IN_HELP = re.compile(r"(?<![\w$/.:~-])((?:\.\.?/)*[\w-]+(?:/[\w.-]+)+\.(?:md|sh|py|ya?ml|json|c|h))\b")


def check_paths(docs, src, progs):
    """Files a --help names and relative links of the docs must exist in the source tree."""
    helps = [(f"trainyard {v} --help", t) for v, t in progs.helps.items()]
    helps.append(("trainyardd --help", progs.daemon_help))
    for where, text in helps:
        for path in PATH_IN_HELP.findall(text):
            full = os.path.normpath(os.path.join(src, path))
            if not full.startswith(src + os.sep) or not os.path.exists(full):
                problem(where, f"names {path}, which is not a file of the source tree")
    for path in docs:
        rel = relname(path, src)
        lines, blocks = read_doc(path)
        fenced = {n for b in blocks for n, _ in b.lines}
        for n, text in enumerate(lines, 1):
            if n in fenced:
                continue
            prose = re.sub(r"`[^`]*`", "", text)  # `NAME[ATTRIBUTES](KEYS)` is no link
            for target in re.findall(r"\]\(([^)\s]+)\)", prose):
                target = target.split("#")[0]
                if not target or re.match(r"^[a-z]+:", target):
                    continue
                if not os.path.exists(os.path.join(os.path.dirname(path), target)):
                    problem(f"{rel}:{n}", f"links to {target}, which does not exist")


# ---------------------------------------------------------------- stale statements

# Wording that says a feature is missing or still to be built. Docs and --help describe what
# the program does; once a feature is built, such a sentence is stale (issue 16: "tuning is not
# implemented yet" stayed in job-spec.md after tuning was built). Matched in whole paragraphs,
# so a phrase broken over two lines is found.
STALE = re.compile(r"""
    \bnot\s+(?:yet\s+)?implemented\b
  | \bnot\s+yet\s+(?:supported|available|done|built|written|possible|handled|wired)\b
  | \bnot\s+(?:supported|available|done|built|possible|handled)\s+yet\b
  | \b(?:does\s+not|do\s+not|doesn't|don't|cannot|can't|won't)\s+(?:\w+\s+){0,2}yet\b
  | \byet\s+to\s+be\b
  | \b(?:are|is|still|yet)\s+to\s+come\b
  | \b(?:runtimes?|features?|versions?|releases?|support|implementations?|verbs?|commands?
       |flags?|options?|work)\s+to\s+come\b
  | \bwill\s+(?:be\s+)?(?:added|implemented|supported|built)\b
  | \bin\s+a\s+(?:future|later|coming|next)\s+(?:version|release)\b
  | \b(?:a|the)\s+(?:planned|future|upcoming|forthcoming)\s+(?:\w+\s+)?(?:runtimes?|features?
       |daemon|service|versions?|releases?|support)\b
""", re.I | re.X)


def paragraphs(lines, blocks):
    """[(first line, [(line number, text)], directive)] of the prose outside fenced blocks: a
    paragraph ends at a blank line, and a heading, list item, table row or HTML comment starts
    a new one; the directive is the `<!-- check: ... -->` on the line before it, if any."""
    fenced = {n for b in blocks for n, _ in b.lines} | {b.line for b in blocks}
    fenced |= {b.line + len(b.lines) + 1 for b in blocks}  # the closing fences
    out, cur, directive, prev = [], [], None, ""
    for n, text in enumerate(lines, 1):
        starts = re.match(r"^\s*(?:#|[-*+] |\d+\. |\||<!--)", text)
        if n in fenced or not text.strip() or starts:
            if cur:
                out.append((cur[0][0], cur, directive))
            cur = []
        if n not in fenced and text.strip() and not text.lstrip().startswith("<!--"):
            if not cur:
                d = re.match(r"^\s*<!--\s*check:\s*(.*?)\s*-->\s*$", prev)
                directive = d.group(1) if d else None
            cur.append((n, text))
        if text.strip():
            prev = text
    if cur:
        out.append((cur[0][0], cur, directive))
    return out


def stale_in(text):
    """The stale phrases of @text (one paragraph, lines joined): [(offset, phrase)]. Code spans
    and text in double quotes are quotations (a message, a phrase talked about), not read."""
    text = re.sub(r'`[^`]*`|"[^"]*"|\u201c[^\u201d]*\u201d', lambda m: " " * len(m.group(0)), text)
    return [(m.start(), re.sub(r"\s+", " ", m.group(0))) for m in STALE.finditer(text)]


def stale_message(phrase):
    return (f"says a feature is missing or to come ('{phrase}'): describe what the program "
            "does; if it really is not built, mark the paragraph <!-- check: not-yet REASON -->")


def check_stale(docs, src, progs):
    """No doc paragraph and no --help says that something is not built yet, unless marked."""
    for path in docs:
        rel = relname(path, src)
        lines, blocks = read_doc(path)
        for first, para, directive in paragraphs(lines, blocks):
            if directive and directive.startswith("not-yet"):
                if not directive[7:].strip():
                    problem(f"{rel}:{first}", "check: not-yet must say why (check: not-yet REASON)")
                continue
            joined, starts = "", []
            for n, text in para:
                starts.append((len(joined), n))
                joined += text.strip() + " "
            for at, phrase in stale_in(joined):
                n = [ln for off, ln in starts if off <= at][-1]
                problem(f"{rel}:{n}", stale_message(phrase))
    helps = [(f"trainyard {v} --help", t) for v, t in progs.helps.items()]
    helps.append(("trainyardd --help", progs.daemon_help))
    for where, text in helps:
        for _, phrase in stale_in(re.sub(r"\s+", " ", text)):
            problem(where, stale_message(phrase))


# ---------------------------------------------------------------- console examples

TIME_RE = [
    re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z| [+-]\d{4})?"),
]
PORT_RE = re.compile(r"127\.0\.0\.1:\d+")


def normalize(line):
    line = line.rstrip()
    for r in TIME_RE:
        line = r.sub("<TIME>", line)
    return PORT_RE.sub("127.0.0.1:<PORT>", line)


def line_pattern(expected):
    if expected.strip() == "...":
        return None  # any number of lines
    parts = normalize(expected).split("...")
    return re.compile("^" + ".*".join(re.escape(p) for p in parts) + "$")


def first_mismatch(patterns, actual):
    """None when the actual lines match the patterns, else the index of the expected line
    matching failed at (the furthest any attempt got)."""
    actual = [normalize(a) for a in actual]
    best = [0]
    seen = set()

    def match(i, j):
        if (i, j) in seen:
            return False
        seen.add((i, j))
        best[0] = max(best[0], i)
        if i == len(patterns):
            return j == len(actual)
        if patterns[i] is None:
            return any(match(i + 1, k) for k in range(j, len(actual) + 1))
        return j < len(actual) and patterns[i].match(actual[j]) is not None and match(i + 1, j + 1)

    return None if match(0, 0) else min(best[0], len(patterns) - 1)


class Daemon:
    def __init__(self, build, scratch):
        self.build, self.scratch, self.proc, self.url = build, scratch, None, None

    def start(self, env, cmd=None):
        """The service's URL: the running one, else a new one, the doc's own @cmd (a
        `trainyardd ...` command line) when given, else one with a state of its own."""
        if self.proc and not cmd:
            return self.url
        self.stop()
        log = os.path.join(self.scratch, "trainyardd.log")
        if cmd:
            extra = " --allow-root-jobs" if os.geteuid() == 0 and not re.search(
                r"--allow-root-jobs|--project-user", cmd) else ""
            argv = ["bash", "-c", f"exec {cmd} --listen 127.0.0.1:0{extra}"]
        else:
            argv = [os.path.join(self.build, "bin", "trainyardd"), "--listen", "127.0.0.1:0",
                    "--state-dir", os.path.join(self.scratch, "service"), "--grace-period", "1"]
            if os.geteuid() == 0:
                argv.append("--allow-root-jobs")
        self.logf = open(log, "w")
        self.proc = subprocess.Popen(argv, stdout=self.logf, stderr=subprocess.STDOUT, env=env,
                                     cwd=self.scratch, stdin=subprocess.DEVNULL)
        for _ in range(200):
            m = re.search(r"listening on .*?127\.0\.0\.1:(\d+)", open(log).read())
            if m:
                self.url = f"http://127.0.0.1:{m.group(1)}"
                return self.url
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError("trainyardd did not start: " + open(log).read()[-500:])

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


def commands_of(block):
    """[(line, command, expected exit, [(line, expected output)])] of a console block."""
    cmds, lines, i = [], block.lines, 0
    while i < len(lines):
        n, text = lines[i]
        i += 1
        if not text.startswith("$ "):
            continue
        cmd = text[2:]
        while cmd.endswith("\\") and i < len(lines):
            cmd += "\n" + lines[i][1]
            i += 1
        m = re.search(r"#\s*exit\s+(\d+)\s*$", cmd)
        out = []
        while i < len(lines) and not lines[i][1].startswith("$ "):
            out.append(lines[i])
            i += 1
        while out and not out[-1][1].strip():
            out.pop()
        cmds.append((n, cmd, int(m.group(1)) if m else 0, out))
    return cmds


def unrun_commands(block):
    """[(line, command)] of the `$ COMMAND` lines of @block that run trainyard or trainyardd:
    commands a reader may type, which a block that is not run lets drift from the program
    (a `$ ` line indented in a block is output, such as the hint `describe` prints)."""
    out = []
    for n, text in block.lines:
        if text.startswith("$ ") and re.search(r"(?:^|[\s/;&|(])trainyardd?(?=\s|$)", text[2:]):
            out.append((n, text[2:]))
    return out


def in_scratch(text, cwd):
    """@text with the paths under /tmp/ moved under the scratch directory @cwd."""
    return re.sub(r"(?<![\w.~/-])/tmp/", cwd + "/tmp/", text)


def run_example(rel, n, cmd, want_rc, out, env, cwd, daemon):
    cmd = in_scratch(cmd, cwd)
    out = [(k, in_scratch(t, cwd)) for k, t in out]
    m = re.match(r"^\s*((?:\S*/)?trainyardd\b.*?)\s*&\s*(#.*)?$", cmd, re.S)
    try:
        if m:
            daemon.start(env, m.group(1).replace("\\\n", " "))  # the doc's own, on a free port
            return
        url = daemon.start(env) if re.search(r"\btrainyard\s+jobs\b|\bcurl\b", cmd) else None
    except RuntimeError as e:
        problem(f"{rel}:{n}", f"'$ {cmd.split(chr(10))[0]}': {e}")
        return
    if url:
        env = dict(env, TRAINYARD_API_ENDPOINT=url)
        cmd = re.sub(r"(?:localhost|127\.0\.0\.1):8080", url[len("http://"):], cmd)
    try:
        p = subprocess.run(["bash", "-c", cmd], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
        rc, got = p.returncode, p.stdout.decode("utf-8", "replace")
    except subprocess.TimeoutExpired as e:
        rc, got = "timeout (60 s)", (e.stdout or b"").decode("utf-8", "replace")
    actual = got.split("\n")
    if actual and actual[-1] == "":
        actual.pop()
    cut = actual if len(actual) <= 30 else actual[:10] + ["..."] + actual[-20:]
    shown = "\n".join("    | " + a for a in cut)
    first = cmd.split("\n")[0]
    if rc != want_rc:
        problem(f"{rel}:{n}", f"'$ {first}' exited {rc}, the doc says {want_rc}; its output:\n{shown}")
        return
    if not out:
        return
    pats = [line_pattern(t) for _, t in out]
    bad = first_mismatch(pats, actual)
    if bad is not None:
        problem(f"{rel}:{out[bad][0]}", f"the output of '$ {first}' (line {n}) does not match "
                f"here: '{out[bad][1]}'; the output was:\n{shown}")


def check_examples(docs, src, build, verbose):
    top = tempfile.mkdtemp(prefix="trainyard-docs.")
    skipped = []
    daemon = None
    try:
        for path in docs:
            rel = relname(path, src)
            _, blocks = read_doc(path)
            cwd = os.path.join(top, re.sub(r"[^\w.-]", "_", rel))
            os.makedirs(os.path.join(cwd, "home"))
            os.makedirs(os.path.join(cwd, "tmp"))
            daemon = Daemon(build, cwd)  # each document its own service, started when needed
            os.symlink(build, os.path.join(cwd, "build"))
            os.symlink(os.path.join(src, "examples"), os.path.join(cwd, "examples"))
            env = {k: v for k, v in os.environ.items()
                   if not k.startswith(("TRAINYARD_", "XDG_", "CLOUDSDK_"))}
            env.update(HOME=os.path.join(cwd, "home"), TRAINYARD_HOME=os.path.join(cwd, "state"),
                       PATH=f"{build}/bin:{build}/examples/digits:{env.get('PATH', '/usr/bin:/bin')}",
                       LC_ALL="C.UTF-8", TZ="UTC")
            for b in blocks:
                d = b.directive or ""
                if d.startswith("file "):
                    with open(os.path.join(cwd, d[5:].strip()), "w") as f:
                        f.write("\n".join(t for _, t in b.lines) + "\n")
                if d.startswith("skip"):
                    if b.info == "console" or unrun_commands(b):
                        skipped.append(f"{rel}:{b.line}: {d[4:].strip() or 'no reason given'}")
                    if not d[4:].strip():
                        problem(f"{rel}:{b.line}", "a skipped example must say why (check: skip REASON)")
                    continue
                if b.info != "console":
                    for n, cmd in unrun_commands(b):
                        problem(f"{rel}:{n}", f"'$ {cmd}' is in a block that is not run, so its "
                                "output can drift: make the block ```console (an example the "
                                "check runs), or mark it <!-- check: skip REASON -->")
                    continue
                for n, cmd, rc, out in commands_of(b):
                    run_example(rel, n, cmd, rc, out, env, cwd, daemon)
            daemon.stop()
    finally:
        if daemon:
            daemon.stop()
        if not problems:
            shutil.rmtree(top, ignore_errors=True)
        else:
            print(f"# scratch directory kept: {top}", file=sys.stderr)
    if verbose:
        for s in skipped:
            print(f"# not run: {s}")


def main():
    sys.setrecursionlimit(20000)  # first_mismatch recurses once per output line
    ap = argparse.ArgumentParser(description="check the docs against the built programs")
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--source-dir", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--only", choices=("examples", "flags"))
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("docs", nargs="*", help="the docs to check (default: README.md, docs/**/*.md)")
    a = ap.parse_args()
    src, build = os.path.abspath(a.source_dir), os.path.abspath(a.build_dir)
    docs = [os.path.abspath(d) for d in a.docs]
    if not docs:
        docs = [os.path.join(src, "README.md")] if os.path.exists(os.path.join(src, "README.md")) else []
        for root, _, files in sorted(os.walk(os.path.join(src, "docs"))):
            docs += [os.path.join(root, f) for f in sorted(files) if f.endswith(".md")]
    progs = Programs(os.path.join(build, "bin"))
    if a.only != "examples":
        check_flags(docs, src, progs)
        check_help_texts(progs)
        check_paths(docs, src, progs)
        check_stale(docs, src, progs)
    if a.only != "flags":
        check_examples(docs, src, build, a.verbose)
    for p in problems:
        print(p)
    sys.stdout.flush()
    if problems:
        print(f"check-docs: {len(problems)} problem(s)", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
