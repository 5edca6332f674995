/*
 * hm_sort.h - qsort comparators more than one library needs. Header-only, so
 * that harmonics-emujob (which links no more of libharmonics than the job
 * catalogue and core) sorts its samples with the simulator's comparator.
 */
#ifndef HM_SORT_H
#define HM_SORT_H

/* Ascending doubles: qsort(v, n, sizeof(double), hm_cmp_double). NaN sorts as
   equal to everything (the samples sorted here have none). */
static inline int hm_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

#endif
