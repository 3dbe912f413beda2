"""The one function of SciPy that datasketch's MinHashLSH imports (scipy.integrate.quad, used to
pick its band parameters), for experiments/peers.sh: Debian bookworm's python3-scipy cannot be
installed beside libboost1.81-dev (its python3-pythran pulls libboost1.74-dev)."""
