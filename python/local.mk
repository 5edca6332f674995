# The harmonics Python package: pure Python over libharmonics-pace (ctypes), no
# compiled extension. `make install` puts it into configure's interpreter's site
# directory (pkgpythondir = pythondir/harmonics); from the source tree it works
# with PYTHONPATH=$(top_srcdir)/python.
HM_PYTHON_FILES = python/harmonics/__init__.py python/harmonics/torch.py
if HAVE_PYTHON
pkgpython_PYTHON = $(HM_PYTHON_FILES)
# Where make install puts the library: the package's first look after
# HARMONICS_PACE_LIB and the build tree (a libdir outside the loader's path).
nodist_pkgpython_PYTHON = python/harmonics/_config.py
endif
EXTRA_DIST += $(HM_PYTHON_FILES)

# Phony: written at every install, so `make install prefix=...` records its own libdir.
.PHONY: python/harmonics/_config.py
python/harmonics/_config.py:
	$(AM_V_GEN)$(MKDIR_P) python/harmonics && \
	printf '"""Written by make: where make install puts libharmonics-pace."""\nLIBDIR = "%s"\n' \
		'$(libdir)' >$@-t && mv $@-t $@
CLEANFILES += python/harmonics/_config.py

# harmonics.torch.pace on real DDP training (2 processes, gloo on 127.0.0.1);
# skips (77) without a python3 that has PyTorch.
TESTS += tests/python/run.sh
EXTRA_DIST += tests/python/run.sh tests/python/test_pace_hook.py
AM_TESTS_ENVIRONMENT += PYTHON='$(PYTHON)'; export PYTHON;
