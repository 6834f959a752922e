# lit configuration of Quill's FileCheck tests; loaded by the lit.site.cfg.py
# that CMake writes into the build tree (see lit.site.cfg.py.in).
import os

import lit.formats

config.name = "Quill"
config.test_format = lit.formats.ShTest(True)
config.suffixes = [".mlir", ".test"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py.in", "CMakeLists.txt"]

if not hasattr(config, "quill_tools_dir"):
    lit_config.fatal("run lit on the build tree's tests/lit, which holds the "
                     "lit.site.cfg.py that CMake writes")

config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = config.quill_obj_root

# quill-opt from the build; FileCheck and not from LLVM 22 (not on PATH unversioned).
tools_dir = config.quill_tools_dir
llvm_tools_dir = "/usr/lib/llvm-22/bin"
for tool, where in (("quill-opt", tools_dir), ("quill-compile", tools_dir),
                    ("quill-synth", tools_dir), ("quill-run", tools_dir),
                    ("FileCheck", llvm_tools_dir),
                    ("not", llvm_tools_dir)):
    if not os.access(os.path.join(where, tool), os.X_OK):
        lit_config.fatal("%s not found in %s" % (tool, where))
config.environment["PATH"] = os.pathsep.join(
    [tools_dir, llvm_tools_dir, config.environment.get("PATH", os.environ.get("PATH", ""))])
