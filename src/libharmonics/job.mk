# job: see Makefile.am
