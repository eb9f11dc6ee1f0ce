#!/usr/bin/env python3
"""Reads each tier's CTest JUnit report and decides whether the run passed.

    test_results.py --allowlist tests/skip_allowlist.txt unit=unit.xml:400 abi=abi.xml:60 ...

Prints, per tier, passed / failed / skipped counts and the name of every skipped test with the
reason the allow-list gives for it. Exits 1 when a tier has a failure, a skip the allow-list does
not name, fewer tests than its minimum, or no report at all (the tier did not run).

The allow-list has one entry per line, `<regular expression> <reason>`: the expression must match
a CTest test name in full; the reason is shown in the summary. `#` starts a comment.
"""
import argparse
import re
import sys
import xml.etree.ElementTree as ET


def read_allowlist(path):
    entries = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            pattern, _, reason = line.partition(" ")
            if not reason.strip():
                sys.exit(f"{path}:{number}: an entry needs a reason after its test pattern")
            entries.append((re.compile(pattern), reason.strip()))
    return entries


def read_results(path):
    """(passed, failed, skipped) lists of test names from one CTest JUnit report."""
    passed, failed, skipped = [], [], []
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("name", "?")
        status = case.get("status", "")
        if case.find("failure") is not None or case.find("error") is not None or status == "fail":
            failed.append(name)
        elif case.find("skipped") is not None or status in ("notrun", "disabled"):
            skipped.append(name)
        else:
            passed.append(name)
    return passed, failed, skipped


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--allowlist", required=True)
    parser.add_argument("tiers", nargs="+", help="<tier>=<junit report>:<minimum test count>")
    args = parser.parse_args()
    allowlist = read_allowlist(args.allowlist)

    ok = True
    for spec in args.tiers:
        tier, _, rest = spec.partition("=")
        report, _, minimum = rest.rpartition(":")
        try:
            passed, failed, skipped = read_results(report)
        except (OSError, ET.ParseError) as error:
            print(f"  {tier:<12} did not run ({error})")
            ok = False
            continue
        total = len(passed) + len(failed) + len(skipped)
        line = f"  {tier:<12} {len(passed)} passed, {len(failed)} failed, {len(skipped)} skipped"
        problems = []
        if failed:
            problems.append("failures")
        if total < int(minimum):
            problems.append(f"ran {total} tests, fewer than its minimum {minimum}")
        print(line + (f"  <- {'; '.join(problems)}" if problems else ""))
        for name in failed:
            print(f"      failed:  {name}")
        for name in skipped:
            reason = next((r for p, r in allowlist if p.fullmatch(name)), None)
            if reason is None:
                print(f"      skipped: {name}  <- not in {args.allowlist}: a skip is a failure")
                problems.append("skip")
            else:
                print(f"      skipped: {name}  (allowed: {reason})")
        ok = ok and not problems
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
