dnl HM_WITH_NCCL: nccl.h and the CUDA runtime headers for the NCCL interposer.
dnl Auto-detected in /usr/local/cuda; warn when missing, fail when asked for.
dnl -isystem: nccl.h declares ncclGroupStart() without (void), which -Werror rejects.
AC_DEFUN([HM_WITH_NCCL], [
  AC_ARG_WITH([nccl],
    [AS_HELP_STRING([--with-nccl[=PREFIX]], [NCCL/CUDA prefix (default: auto, /usr/local/cuda)])],
    [], [with_nccl=check])
  hm_have_nccl=no
  NCCL_CPPFLAGS=""
  AS_IF([test "x$with_nccl" != xno], [
    hm_nccl_prefix=/usr/local/cuda
    AS_IF([test "x$with_nccl" != xcheck && test "x$with_nccl" != xyes], [hm_nccl_prefix="$with_nccl"])
    AS_IF([test -f "$hm_nccl_prefix/include/nccl.h" && test -f "$hm_nccl_prefix/include/cuda_runtime_api.h"], [
      hm_have_nccl=yes
      NCCL_CPPFLAGS="-isystem $hm_nccl_prefix/include"
    ], [
      AS_IF([test "x$with_nccl" = xcheck],
        [AC_MSG_WARN([nccl.h/cuda_runtime_api.h not found under $hm_nccl_prefix: NCCL interposer not built])],
        [AC_MSG_ERROR([--with-nccl given but nccl.h or cuda_runtime_api.h missing under $hm_nccl_prefix/include])])
    ])
  ])
  AC_SUBST([NCCL_CPPFLAGS])
  AM_CONDITIONAL([HAVE_NCCL], [test "x$hm_have_nccl" = xyes])
])
