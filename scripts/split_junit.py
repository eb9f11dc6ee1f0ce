#!/usr/bin/env python3
"""Splits one CTest JUnit report into one report per tier.

    split_junit.py <report.xml> <ctest --show-only=json-v1 output> <directory> <tier>...

A test belongs to the first of the given tiers among its labels (CTest lists a test's labels
sorted, so the tier label's place among them says nothing). Writes <directory>/<tier>.xml for
each tier that has a test in the report. scripts/test.sh runs the integration and e2e tiers in
one CTest run (so that CTest's resource locks order them against each other and no core idles
at the boundary), and test_results.py still judges each tier by its own report and minimum. A
test of the report that carries none of the tiers goes to `unknown.xml`, and the split fails.
"""
import json
import os
import sys
import xml.etree.ElementTree as ET


def main():
    if len(sys.argv) < 5:
        sys.exit("usage: split_junit.py <report.xml> <ctest json-v1> <directory> <tier>...")
    report, listing, directory, tiers = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    labels_of = {}
    with open(listing, encoding="utf-8") as f:
        for test in json.load(f)["tests"]:
            for prop in test.get("properties", []):
                if prop["name"] == "LABELS":
                    labels_of[test["name"]] = set(prop["value"])
    cases = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        labels = labels_of.get(case.get("name", "?"), set())
        tier = next((t for t in tiers if t in labels), "unknown")
        cases.setdefault(tier, []).append(case)
    os.makedirs(directory, exist_ok=True)
    for tier, tier_cases in cases.items():
        suite = ET.Element("testsuite", name=tier, tests=str(len(tier_cases)))
        suite.extend(tier_cases)
        ET.ElementTree(suite).write(os.path.join(directory, tier + ".xml"), encoding="utf-8",
                                    xml_declaration=True)
    for case in cases.get("unknown", []):
        print(f"split_junit.py: {case.get('name')} carries none of the tiers {tiers}",
              file=sys.stderr)
    return 1 if "unknown" in cases else 0


if __name__ == "__main__":
    sys.exit(main())
