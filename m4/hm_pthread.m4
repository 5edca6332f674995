dnl AX_PTHREAD_SIMPLE: POSIX threads via -pthread (GCC and clang on Linux).
AC_DEFUN([AX_PTHREAD_SIMPLE], [
  PTHREAD_CFLAGS="-pthread"
  PTHREAD_LIBS="-pthread"
  AC_SUBST([PTHREAD_CFLAGS])
  AC_SUBST([PTHREAD_LIBS])
])
