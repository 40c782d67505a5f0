# Sourced by setup.sh, test.sh and quickstart.sh (not run by itself): which
# Python interpreter cclab is installed into and run with.
#
#   1. a virtual environment is active ($VIRTUAL_ENV)        -> its python
#   2. else python3 is not externally managed (PEP 668:       -> python3 itself
#      e.g. pyenv, a python.org build, a conda base)             (as before)
#   3. else (a Debian/Ubuntu system Python)                  -> the project venv
#                                                                .venv at the repository root
#
# Afterwards $PY is that interpreter and its bin directory is first on $PATH,
# so the scripts' own `cclab …`, `python3 -m pytest` and the tests'
# `python -m cclab` / sys.executable subprocesses all use the same install.
# Call from the repository root.

cclab_choose_python() {
  CCLAB_NEEDS_VENV=0
  if [ -n "${VIRTUAL_ENV:-}" ] && [ -x "$VIRTUAL_ENV/bin/python" ]; then
    PY="$VIRTUAL_ENV/bin/python"
  elif python3 - <<'PYEOF'
import os, sys, sysconfig
managed = os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED"))
sys.exit(0 if sys.prefix != sys.base_prefix or not managed else 1)
PYEOF
  then
    PY=$(python3 -c 'import sys; print(sys.executable)')
  else
    PY="$PWD/.venv/bin/python"
    [ -x "$PY" ] || CCLAB_NEEDS_VENV=1
  fi
  export PATH="$(dirname "$PY"):$PATH"
}
