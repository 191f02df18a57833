#!/usr/bin/env python3
"""Prints the source stamp of a checkout: the hash build.rs stamps into the core and
lua/acp/core/init.lua computes (sha256 over "<relpath>\\n<len>\\n<content>" of Cargo.toml,
Cargo.lock, build.rs and every src/**/*.rs, sorted by path). The release workflow publishes it
as SOURCE_STAMP beside the cores, so that a checkout between releases learns that the release's
core is not for its sources before it downloads it.

    python3 scripts/source_stamp.py [checkout]
"""
import hashlib
import os
import sys

root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..'))
files = [f for f in ('Cargo.toml', 'Cargo.lock', 'build.rs') if os.path.isfile(os.path.join(root, f))]
for d, _, names in os.walk(os.path.join(root, 'src')):
    for n in names:
        if n.endswith('.rs'):
            files.append(os.path.relpath(os.path.join(d, n), root).replace(os.sep, '/'))
h = hashlib.sha256()
for rel in sorted(files):
    with open(os.path.join(root, rel), 'rb') as f:
        data = f.read()
    h.update(b'%s\n%d\n' % (rel.encode(), len(data)))
    h.update(data)
print(h.hexdigest())
