# policies: see Makefile.am
