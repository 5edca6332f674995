dnl HM_WITH_SLURM: libslurm-dev (spank.h) for the SPANK plugin, and a configured
dnl Slurm source tree of exactly the installed version for sched/select plugins.
dnl Auto-detected; missing pieces warn, an explicit --with-* that fails is fatal.
AC_DEFUN([HM_WITH_SLURM], [
  AC_ARG_WITH([slurm],
    [AS_HELP_STRING([--with-slurm[=PREFIX]], [Slurm headers prefix (default: auto)])],
    [], [with_slurm=check])
  AC_ARG_WITH([slurm-source],
    [AS_HELP_STRING([--with-slurm-source=DIR],
      [configured Slurm source tree of the running version (for sched/select plugins)])],
    [], [with_slurm_source=check])

  hm_have_spank=no
  SLURM_CPPFLAGS=""
  AS_IF([test "x$with_slurm" != xno], [
    hm_slurm_prefix=/usr
    AS_IF([test "x$with_slurm" != xcheck && test "x$with_slurm" != xyes], [hm_slurm_prefix="$with_slurm"])
    AS_IF([test -f "$hm_slurm_prefix/include/slurm/spank.h"], [
      hm_have_spank=yes
      AS_IF([test "$hm_slurm_prefix" != /usr], [SLURM_CPPFLAGS="-I$hm_slurm_prefix/include"])
    ], [
      AS_IF([test "x$with_slurm" = xcheck],
        [AC_MSG_WARN([slurm/spank.h not found: SPANK plugin not built (install libslurm-dev)])],
        [AC_MSG_ERROR([--with-slurm given but $hm_slurm_prefix/include/slurm/spank.h not found])])
    ])
  ])
  AC_SUBST([SLURM_CPPFLAGS])

  hm_have_slurm_source=no
  hm_slurm_source=""
  AS_IF([test "x$with_slurm_source" != xno && test "x$with_slurm_source" != xcheck], [
    hm_slurm_source="$with_slurm_source"
    AS_IF([test -f "$hm_slurm_source/config.h" || test -f "$hm_slurm_source/build/config.h"], [
      hm_have_slurm_source=yes
    ], [
      AC_MSG_ERROR([--with-slurm-source=$hm_slurm_source is not a configured Slurm tree (no config.h)])
    ])
  ])
  AC_SUBST([SLURM_SOURCE], [$hm_slurm_source])
  AM_CONDITIONAL([HAVE_SPANK], [test "x$hm_have_spank" = xyes])
  AM_CONDITIONAL([HAVE_SLURM_SOURCE], [test "x$hm_have_slurm_source" = xyes])
])
