"""The docs a user reads: every relative link and anchor in README.md and docs/ resolves
(scripts/check_doc_links.py), and the checker catches a broken one."""
import os
import subprocess
import sys

from conftest import ROOT

CHECK = os.path.join(ROOT, "scripts", "check_doc_links.py")


def test_every_link_in_the_docs_resolves():
    proc = subprocess.run([sys.executable, CHECK], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout


def test_the_checker_catches_a_missing_file_and_a_missing_heading(tmp_path):
    sys.path.insert(0, os.path.dirname(CHECK))
    import check_doc_links
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n## A section\n\n[ok](#a-section) [gone](#nowhere) [file](missing.md)\n")
    broken, checked = check_doc_links.broken_links([str(page)])
    assert checked == 3
    assert len(broken) == 2 and "no heading #nowhere" in broken[0] and "missing.md: no such file" in broken[1], broken
