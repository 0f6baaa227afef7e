"""Only what pyproject.toml cannot say: the rewrite rules live at the repository root (rewrites/),
where users read and edit them, and ship inside the package as `rocm_perf.rewrites`, so an installed
copy (a wheel, not only an editable checkout) finds them."""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["rocm_perf", "rocm_perf.*"]) + ["rocm_perf.rewrites"],
    package_dir={"rocm_perf.rewrites": "rewrites"},
    package_data={"rocm_perf.rewrites": ["*.j2"]},
)
