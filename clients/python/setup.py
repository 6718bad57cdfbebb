"""Builds the package with its gRPC stubs generated from the repository's proto/ (or the
directory PATIENCE_PROTO_DIR names), so that they always match the API of this checkout.

The generated `_grpc` module imports `patience.v1.patience_pb2` by its proto path; here both
modules live in `patience_client`, so that import is made relative: the package puts no
top-level `patience` package on anyone's path. Everything else is in pyproject.toml.
"""

import os
import re
import tempfile
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
PROTO_DIR = Path(os.environ.get("PATIENCE_PROTO_DIR") or HERE.parent.parent / "proto")
# Each proto's stubs: the solving services, and the jobs the daemon runs.
PROTOS = ["patience/v1/patience.proto", "patience/v1/jobs.proto"]


class BuildWithStubs(build_py):
    def run(self):
        super().run()
        from grpc_tools import protoc  # a build requirement only

        for proto in PROTOS:
            if not (PROTO_DIR / proto).is_file():
                raise SystemExit(f"{PROTO_DIR / proto} not found: build from the repository's clients/python,"
                                 " or set PATIENCE_PROTO_DIR to its proto/ directory")
        package = Path(self.build_lib) / "patience_client"
        with tempfile.TemporaryDirectory() as out:
            argv = ["grpc_tools.protoc", f"-I{PROTO_DIR}", f"--python_out={out}",
                    f"--grpc_python_out={out}", *(str(PROTO_DIR / proto) for proto in PROTOS)]
            if protoc.main(argv) != 0:
                raise SystemExit(f"grpc_tools.protoc failed on {PROTOS}")
            generated = Path(out) / "patience" / "v1"
            for proto in PROTOS:
                name = Path(proto).stem
                messages = (generated / f"{name}_pb2.py").read_text(encoding="utf-8")
                services, imports = re.subn(rf"^from patience\.v1 import {name}_pb2 as ",
                                            f"from . import {name}_pb2 as ",
                                            (generated / f"{name}_pb2_grpc.py").read_text(encoding="utf-8"),
                                            flags=re.M)
                if imports != 1:
                    raise SystemExit(f"the generated {name}_pb2_grpc.py does not import {name}_pb2 as expected")
                (package / f"{name}_pb2.py").write_text(messages, encoding="utf-8")
                (package / f"{name}_pb2_grpc.py").write_text(services, encoding="utf-8")


setup(cmdclass={"build_py": BuildWithStubs})
