/*
 * harmonics-emujob: an emulated data-parallel training job (see ej.h, --help,
 * docs/pacing.md). Thin entry: options, then one rank or the --local launcher.
 */
#include <signal.h>
#include <stdio.h>

#include "ej.h"

int main(int argc, char **argv)
{
	ej_opts_t o;
	hm_err_t err = {0};
	bool help = false;

	signal(SIGPIPE, SIG_IGN);
	if (ej_opts_parse(argc, argv, &o, &help, &err) != HM_OK) {
		fprintf(stderr, "harmonics-emujob: %s\n", err.msg);
		return EJ_EXIT_USAGE;
	}
	if (help) {
		ej_usage(stdout);
		return 0;
	}
	if (o.dry_run) {
		ej_print_resolved(&o, stdout);
		return 0;
	}
	if (o.local > 0)
		return ej_run_local(&o, stdout);
	if (ej_run_rank(&o, stdout, &err) != HM_OK) {
		fprintf(stderr, "harmonics-emujob: %s\n", err.msg);
		return EJ_EXIT_FAILED;
	}
	return 0;
}
