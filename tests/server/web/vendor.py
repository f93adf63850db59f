"""Check (or refresh) the vendored msgpack codec against the npm package it comes from.

    python -m tests.server.web.vendor            # fetch the pinned package, compare
    python -m tests.server.web.vendor --update   # copy its files in, rewrite vendor.json

The page's codec is the browser ES module build (``dist.esm``) of ``@msgpack/msgpack`` at
the version pinned in ``server/web/vendor.json``, with its licence, unchanged. This fetches
the package with ``npm pack`` (the registry's tarball, checked against the integrity
recorded in the manifest) and compares every file; ``tests/server/test_web.py`` checks the
vendored files against the manifest's digests without the network.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

WEB = Path(__file__).resolve().parents[3] / "server" / "web"
MANIFEST = WEB / "vendor.json"
SHIPPED = ("package/dist.esm/", ".mjs")  # the ES module build
LICENSE = "package/LICENSE"


def fetch(package: str, version: str, into: Path) -> Path:
    out = subprocess.run(["npm", "pack", f"{package}@{version}", "--json"], cwd=into,
                         capture_output=True, text=True, check=True)
    return into / json.loads(out.stdout)[0]["filename"]


def integrity(tarball: Path) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(tarball.read_bytes()).digest()).decode()


def shipped_files(tarball: Path) -> dict[str, bytes]:
    """The files the page uses, by their path under the vendored directory."""
    out: dict[str, bytes] = {}
    with tarfile.open(tarball) as tar:
        for member in tar.getmembers():
            name = member.name
            if name == LICENSE or (name.startswith(SHIPPED[0]) and name.endswith(SHIPPED[1])):
                data = tar.extractfile(member)
                assert data is not None
                out[name.removeprefix(SHIPPED[0]).removeprefix("package/")] = data.read()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--update", action="store_true", help="vendor the package's files")
    parser.add_argument("--version", help="with --update: another version")
    args = parser.parse_args()
    manifest = json.loads(MANIFEST.read_text())
    version = args.version or manifest["version"]
    root = WEB / "static" / manifest["directory"]
    with tempfile.TemporaryDirectory() as tmp:
        tarball = fetch(manifest["package"], version, Path(tmp))
        files = shipped_files(tarball)
        if args.update:
            shutil.rmtree(root, ignore_errors=True)
            for name, data in files.items():
                (root / name).parent.mkdir(parents=True, exist_ok=True)
                (root / name).write_bytes(data)
            manifest.update(version=version, integrity=integrity(tarball), files={
                name: hashlib.sha256(data).hexdigest() for name, data in sorted(files.items())})
            MANIFEST.write_text(json.dumps(manifest, indent=2) + "\n")
            print(f"vendored {manifest['package']}@{version}: {len(files)} files")
            return 0
        problems = []
        if integrity(tarball) != manifest["integrity"]:
            problems.append("the registry's tarball is not the one recorded")
        vendored = {str(path.relative_to(root)): path.read_bytes()
                    for path in root.rglob("*") if path.is_file()}
        if vendored != files:
            problems.append(f"files differ: {sorted(set(vendored) ^ set(files)) or 'contents'}")
        for problem in problems:
            print(f"vendor: {problem}", file=sys.stderr)
        if not problems:
            print(f"{manifest['package']}@{version}: {len(files)} files as published")
        return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
