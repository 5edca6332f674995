dnl HM_WITH_SLURM: libslurm-dev (spank.h) for the SPANK plugin, and a configured
dnl Slurm source tree for the sched/select plugins (scripts/slurm-tree.sh VERSION):
dnl with --with-slurm-source=DIR all three plugins are built for DIR's release,
dnl with its own headers, whichever Slurm is installed.
dnl Auto-detected; missing pieces warn, an explicit --with-* that fails is fatal.
AC_DEFUN([HM_WITH_SLURM], [
  AC_ARG_WITH([slurm],
    [AS_HELP_STRING([--with-slurm[=PREFIX]], [Slurm headers prefix (default: auto)])],
    [], [with_slurm=check])
  AC_ARG_WITH([slurm-source],
    [AS_HELP_STRING([--with-slurm-source=DIR],
      [configured Slurm source tree (scripts/slurm-tree.sh VERSION): all plugins are built for its release])],
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
      AC_MSG_ERROR([--with-slurm-source=$with_slurm_source is not a configured Slurm tree (no config.h; run scripts/slurm-tree.sh VERSION)])
    ])
    dnl The source tree: the build dir's abs_top_srcdir (VPATH build) or itself.
    hm_slurm_srcdir=`sed -n 's/^abs_top_srcdir = //p' "$hm_slurm_source/Makefile" 2>/dev/null`
    AS_IF([test -z "$hm_slurm_srcdir"], [hm_slurm_srcdir="$hm_slurm_source"])
    AS_IF([test -f "$hm_slurm_srcdir/src/slurmctld/slurmctld.h"], [], [
      AC_MSG_ERROR([Slurm sources not found at $hm_slurm_srcdir (src/slurmctld/slurmctld.h missing)])
    ])
    dnl The plugins are built for the release configured in the tree, whatever Slurm
    dnl is installed here (slurmctld loads sched/select plugins of its exact version
    dnl only: a different one is a warning, for building packages or a test matrix).
    AC_MSG_CHECKING([Slurm version of the source tree])
    hm_src_ver=`sed -n 's/^#define SLURM_VERSION_STRING "\(.*\)"/\1/p' "$hm_slurm_source/config.h" | head -1`
    AC_MSG_RESULT([${hm_src_ver:-unknown}])
    AS_IF([test -z "$hm_src_ver" || test ! -f "$hm_slurm_source/slurm/slurm_version.h"], [
      AC_MSG_ERROR([cannot read the Slurm version of $hm_slurm_source (config.h, slurm/slurm_version.h)])
    ])
    hm_inst_ver=""
    AS_IF([command -v slurmctld >/dev/null 2>&1],
      [hm_inst_ver=`slurmctld -V 2>/dev/null | sed -n 's/^slurm[[^ ]]* //p' | head -1`])
    AS_IF([test -n "$hm_inst_ver" && test "x$hm_src_ver" != "x$hm_inst_ver"], [
      AC_MSG_WARN([plugins built for Slurm $hm_src_ver; the installed slurmctld is $hm_inst_ver and will not load the sched/select plugins of this build])
    ])
    hm_have_slurm_source=yes
    dnl The tree's generated <slurm/slurm_version.h>, alone in a folder of this build:
    dnl its build dir cannot be -isystem too (GCC would drop the -iquote that makes
    dnl Slurm's "config.h" win over harmonics' own).
    AS_MKDIR_P([slurm-include/slurm])
    cp "$hm_slurm_source/slurm/slurm_version.h" slurm-include/slurm/slurm_version.h ||
      AC_MSG_ERROR([cannot copy $hm_slurm_source/slurm/slurm_version.h])
    hm_slurm_inc="-isystem \$(abs_top_builddir)/slurm-include -isystem $hm_slurm_srcdir"
    SLURM_SRC_CPPFLAGS="-DHAVE_CONFIG_H -iquote $hm_slurm_source $hm_slurm_inc -isystem $hm_slurm_srcdir/src/common"
    dnl The SPANK plugin too: the tree's slurm/spank.h, not the installed one.
    AS_IF([test "x$with_slurm" != xno], [
      hm_have_spank=yes
      SLURM_CPPFLAGS="$hm_slurm_inc"
    ])
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
