"""Generate (or check) the Python code for every .proto under proto/.

Paths mirror packages: proto/migration/proto/x.proto -> migration/proto/x_pb2.py (+ .pyi,
_pb2_grpc.py). ``python proto/generate.py`` rewrites migration/proto; ``--check`` exits 1
when the committed code differs from a fresh generation (CI runs it).
"""

from __future__ import annotations

import filecmp
import shutil
import sys
import tempfile
from pathlib import Path

from grpc_tools import protoc  # dev dependency (grpcio-tools)

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ROOT / "proto"
OUTPUT = ROOT / "migration" / "proto"
GENERATED = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py")


def generate(into: Path) -> list[Path]:
    protos = sorted(SOURCES.rglob("*.proto"))
    include = Path(protoc.__file__).parent / "_proto"
    args = [
        "protoc",
        f"-I{SOURCES}",
        f"-I{include}",
        f"--python_out={into}",
        f"--pyi_out={into}",
        f"--grpc_python_out={into}",
        *map(str, protos),
    ]
    if protoc.main(args) != 0:
        sys.exit("protoc failed")
    return sorted(p for p in (into / "migration" / "proto").iterdir() if p.name.endswith(GENERATED))


def main() -> int:
    check = "--check" in sys.argv[1:]
    with tempfile.TemporaryDirectory() as tmp:
        fresh = generate(Path(tmp))
        committed = sorted(p for p in OUTPUT.iterdir() if p.name.endswith(GENERATED))
        if check:
            stale = {p.name for p in committed} ^ {p.name for p in fresh}
            stale |= {
                p.name
                for p in fresh
                if not (OUTPUT / p.name).exists()
                or not filecmp.cmp(p, OUTPUT / p.name, shallow=False)
            }
            if stale:
                print(f"generated protobuf code is stale: {sorted(stale)}; run 'make proto'")
                return 1
            return 0
        for old in committed:
            old.unlink()
        for new in fresh:
            shutil.copy(new, OUTPUT / new.name)
        (OUTPUT / "__init__.py").write_text(
            '"""Generated protobuf and gRPC code: do not edit; run make proto."""\n'
        )
        print(f"generated {len(fresh)} files into {OUTPUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
