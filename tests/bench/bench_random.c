/*
 * bench_random: every policy on random small contended instances (prints
 * numbers, no pass/fail; tests/unit/random_instances.h describes them). Per
 * instance the mean JCT of each policy over fair's, and the bound's; then the
 * summary docs/evaluation.md quotes: harmonics' worst mean JCT over fair's,
 * how many instances exceed 0.5%, its p99 JCT next to fair's, the worst
 * per-job JCT over the same job's under fair (no job starved), optimal
 * against the best other policy, and the bound below every run.
 *
 * Usage: bench_random [--instances N (60)] [--first K (0)] [--budget S (1)] [--jobs]
 *   --jobs: each job's JCT under each policy too
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/random_instances.h"

#define NPOL 5

int main(int argc, char **argv)
{
	extern const hm_policy_ops_t hm_policy_fair, hm_policy_optimal, hm_policy_cassini,
	    hm_policy_crux, hm_policy_harmonics;
	const hm_policy_ops_t *pol[NPOL] = {&hm_policy_fair, &hm_policy_optimal, &hm_policy_cassini,
					    &hm_policy_crux, &hm_policy_harmonics};
	long n = 60, first = 0;
	int verbose = 0;
	double budget = 1, worst_h = 0, worst_job = 0, worst_opt = 0, sum_h = 0, sum_p99 = 0;
	double bound_margin = HUGE_VAL;
	int over = 0, done = 0, opt_cut = 0, opt_over = 0;

	for (int a = 1; a < argc; a++) {
		char *end = NULL;
		if (a + 1 < argc && strcmp(argv[a], "--instances") == 0)
			n = strtol(argv[++a], &end, 10);
		else if (a + 1 < argc && strcmp(argv[a], "--first") == 0)
			first = strtol(argv[++a], &end, 10);
		else if (a + 1 < argc && strcmp(argv[a], "--budget") == 0)
			budget = strtod(argv[++a], &end);
		else if (strcmp(argv[a], "--jobs") == 0)
			verbose = 1, end = "";
		if (!end || *end || n < 1 || first < 0 || !(budget > 0)) {
			fprintf(stderr,
				"usage: bench_random [--instances N >= 1] [--first K >= 0] "
				"[--budget S > 0]; bad '%s'\n",
				argv[a]);
			return 2;
		}
	}
	printf("# instance, what, then mean JCT / fair's for optimal cassini crux harmonics, "
	       "bound / fair's, harmonics p99 / fair's p99\n");
	for (long k = first; k < first + n; k++) {
		ri_t ri;
		hm_sim_result_t r[NPOL];
		hm_err_t err = {0};
		double best_other = HUGE_VAL, bmin = HUGE_VAL;
		int nr = 0;

		if (ri_make(&ri, (unsigned long)k) != 0) {
			ri_free(&ri);
			continue;
		}
		for (; nr < NPOL; nr++)
			if (ri_run(&ri, pol[nr], 1 + (unsigned long)k, budget, &r[nr], &err) !=
			    HM_OK) {
				fprintf(stderr, "bench_random: instance %ld, %s: %s\n", k,
					pol[nr]->name, err.msg);
				break;
			}
		if (nr == NPOL) {
			double f = r[0].mean_jct_s, h = r[4].mean_jct_s;
			for (int p = 0; p < NPOL; p++) {
				bmin = fmin(bmin, r[p].bound_mean_jct_s);
				if (p != 1)
					best_other = fmin(best_other, r[p].mean_jct_s);
			}
			for (int p = 0; p < NPOL; p++)
				bound_margin = fmin(bound_margin, r[p].mean_jct_s / bmin);
			printf("%ld, %s, %.4f %.4f %.4f %.4f, %.4f, %.4f\n", k, ri.what,
			       r[1].mean_jct_s / f, r[2].mean_jct_s / f, r[3].mean_jct_s / f, h / f,
			       bmin / f, r[4].p99_jct_s / r[0].p99_jct_s);
			for (int i = 0; verbose && i < r[0].njobs; i++) {
				printf("  job %d:", i);
				for (int p = 0; p < NPOL; p++)
					printf(" %s %.1f", pol[p]->name, r[p].jobs[i].jct_s);
				printf("\n");
			}
			worst_h = fmax(worst_h, h / f);
			sum_h += h / f;
			sum_p99 += r[4].p99_jct_s / r[0].p99_jct_s;
			over += h > f * 1.005;
			for (int i = 0; i < r[0].njobs; i++)
				if (r[0].jobs[i].completed && r[4].jobs[i].completed)
					worst_job = fmax(worst_job,
							 r[4].jobs[i].jct_s / r[0].jobs[i].jct_s);
			worst_opt = fmax(worst_opt, r[1].mean_jct_s / best_other);
			opt_over += r[1].mean_jct_s > best_other * 1.01;
			opt_cut += r[1].budget_exhausted;
			done++;
		}
		for (int p = 0; p < nr; p++)
			hm_sim_result_free(&r[p]);
		ri_free(&ri);
	}
	printf("# %d instances (from %ld), optimal's budget %g s\n", done, first, budget);
	printf("harmonics mean JCT / fair's: worst %.4f, mean %.4f, instances above 1.005: %d\n",
	       worst_h, done ? sum_h / done : 0, over);
	printf("harmonics p99 JCT / fair's p99: mean %.4f\n", done ? sum_p99 / done : 0);
	printf("worst per-job JCT under harmonics / the same job's under fair: %.4f\n", worst_job);
	printf("optimal mean JCT / best other policy's: worst %.4f, instances above 1.01: %d, "
	       "budget cut in %d\n",
	       worst_opt, opt_over, opt_cut);
	printf("every run / the lowest bound of its instance: at least %.4f (>= 1: the bound "
	       "holds)\n",
	       bound_margin);
	return 0;
}
