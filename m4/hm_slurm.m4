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
    AS_IF([test -f "$hm_slurm_source/build/config.h"], [hm_slurm_source="$hm_slurm_source/build"])
    AS_IF([test -f "$hm_slurm_source/config.h"], [], [
      AC_MSG_ERROR([--with-slurm-source=$with_slurm_source is not a configured Slurm tree (no config.h; run scripts/slurm-source.sh)])
    ])
    dnl The source tree: the build dir's abs_top_srcdir (VPATH build) or itself.
    hm_slurm_srcdir=`sed -n 's/^abs_top_srcdir = //p' "$hm_slurm_source/Makefile" 2>/dev/null`
    AS_IF([test -z "$hm_slurm_srcdir"], [hm_slurm_srcdir="$hm_slurm_source"])
    AS_IF([test -f "$hm_slurm_srcdir/src/slurmctld/slurmctld.h"], [], [
      AC_MSG_ERROR([Slurm sources not found at $hm_slurm_srcdir (src/slurmctld/slurmctld.h missing)])
    ])
    dnl sched/select plugins carry the exact version: it must equal the installed Slurm's.
    AC_MSG_CHECKING([Slurm version of the source tree])
    hm_src_ver=`sed -n 's/^#define SLURM_VERSION_STRING "\(.*\)"/\1/p' "$hm_slurm_source/config.h" | head -1`
    AC_MSG_RESULT([${hm_src_ver:-unknown}])
    AC_MSG_CHECKING([version of the installed Slurm])
    hm_inst_ver=""
    AS_IF([command -v slurmctld >/dev/null 2>&1],
      [hm_inst_ver=`slurmctld -V 2>/dev/null | sed -n 's/^slurm[[^ ]]* //p' | head -1`])
    AS_IF([test -z "$hm_inst_ver" && test -f "$hm_slurm_prefix/include/slurm/slurm_version.h"], [
      hm_vnum=`sed -n 's/^#define SLURM_VERSION_NUMBER 0x\(.*\)/\1/p' "$hm_slurm_prefix/include/slurm/slurm_version.h"`
      AS_IF([test -n "$hm_vnum"], [hm_inst_ver=`printf '%d.%02d.%d' $((0x$hm_vnum >> 16)) $(((0x$hm_vnum >> 8) & 255)) $((0x$hm_vnum & 255))`])
    ])
    AC_MSG_RESULT([${hm_inst_ver:-unknown}])
    AS_IF([test -z "$hm_src_ver" || test -z "$hm_inst_ver"], [
      AC_MSG_ERROR([cannot tell the Slurm versions apart (source tree: ${hm_src_ver:-unknown}, installed: ${hm_inst_ver:-unknown})])
    ])
    AS_IF([test "x$hm_src_ver" != "x$hm_inst_ver"], [
      AC_MSG_ERROR([Slurm source tree $hm_slurm_source is version $hm_src_ver but the installed Slurm is $hm_inst_ver: sched/select plugins must match exactly (run scripts/slurm-source.sh)])
    ])
    hm_have_slurm_source=yes
    dnl -iquote: Slurm's "config.h" wins over harmonics' own (the same dir must not also be
    dnl -isystem: GCC would drop the -iquote); -isystem: no warnings from Slurm headers;
    dnl <slurm/slurm_version.h> then comes from the installed headers, checked equal above.
    SLURM_SRC_CPPFLAGS="-DHAVE_CONFIG_H -iquote $hm_slurm_source -isystem $hm_slurm_srcdir -isystem $hm_slurm_srcdir/src/common"
  ])
  AC_SUBST([SLURM_SOURCE], [$hm_slurm_source])
  AC_SUBST([SLURM_SRC_CPPFLAGS])
  AC_SUBST([SLURM_VERSION_BUILT], [$hm_src_ver])
  dnl With --prefix=/usr --libdir=/usr/lib/x86_64-linux-gnu this is Debian's PluginDir.
  AC_ARG_VAR([SLURM_PLUGINDIR], [where to install the Slurm plugins (default: LIBDIR/slurm-wlm)])
  AS_IF([test -z "$SLURM_PLUGINDIR"], [SLURM_PLUGINDIR='${libdir}/slurm-wlm'])
  AM_CONDITIONAL([HAVE_SPANK], [test "x$hm_have_spank" = xyes])
  AM_CONDITIONAL([HAVE_SLURM_SOURCE], [test "x$hm_have_slurm_source" = xyes])
])
