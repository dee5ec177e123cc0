/* Fixed blocks of rows: the unit of work of the sums over the points.
 *
 * Their number is a function of n alone: one block up to PYOPNB_BLOCK_ROWS
 * rows (a single sequential pass, R's order, up to there), then as many as
 * that takes, at most PYOPNB_MAX_BLOCKS (the block partials' memory), each
 * of ceil(n / blocks) rows, the last shorter. A sum over the points is added
 * in order within each block, from zero, and the blocks' partials in block
 * order: the bits depend on n alone, never on the threads, nor on how the
 * rows are split between machines as long as the blocks stay whole.
 */
#ifndef PYOPNB_BLOCKS_H
#define PYOPNB_BLOCKS_H

#include <stddef.h>

#define PYOPNB_BLOCK_ROWS 65536
#define PYOPNB_MAX_BLOCKS 64

static inline ptrdiff_t pyopnb_row_blocks(ptrdiff_t n) {
    const ptrdiff_t b = (n + PYOPNB_BLOCK_ROWS - 1) / PYOPNB_BLOCK_ROWS;
    return b < 1 ? 1 : (b > PYOPNB_MAX_BLOCKS ? PYOPNB_MAX_BLOCKS : b);
}

/* rows per block (the last block may hold fewer) */
static inline ptrdiff_t pyopnb_block_len(ptrdiff_t n) {
    const ptrdiff_t b = pyopnb_row_blocks(n);
    return (n + b - 1) / b;
}

/* part[0] += part[1], then part[2], ...: the blocks' partials (nblk of len
 * entries each) added in block order, into the first */
static inline void pyopnb_reduce_blocks(double* part, ptrdiff_t nblk, ptrdiff_t len) {
    for (ptrdiff_t b = 1; b < nblk; ++b) {
        const double* src = part + b * len;
        for (ptrdiff_t j = 0; j < len; ++j) part[j] = part[j] + src[j];
    }
}

/* sum_i w_i t_i over the points i0 <= i < i1 (w NULL: sum_i t_i), in order from 0: one block's partial */
static inline double pyopnb_block_part(const double* t, const double* w, ptrdiff_t i0, ptrdiff_t i1) {
    double part = 0.0;
    if (w == NULL)
        for (ptrdiff_t i = i0; i < i1; ++i) part = part + t[i];
    else
        for (ptrdiff_t i = i0; i < i1; ++i) part = part + w[i] * t[i];
    return part;
}

/* each block's partial of sum_i w_i t_i over the points i < n in blocks of
 * B rows, into out[0..ceil(n / B)): the rows a machine holds of a larger
 * problem, as whole blocks of it */
static inline void pyopnb_block_partials(const double* t, const double* w, ptrdiff_t n, ptrdiff_t B, double* out) {
    for (ptrdiff_t b = 0; b * B < n; ++b)
        out[b] = pyopnb_block_part(t, w, b * B, (b + 1) * B < n ? (b + 1) * B : n);
}

/* sum_i w_i t_i over the points i < n (w NULL: sum_i t_i) by the blocks:
 * the value's sum of its points' terms */
static inline double pyopnb_block_sum(const double* t, const double* w, ptrdiff_t n) {
    const ptrdiff_t nblk = pyopnb_row_blocks(n), B = pyopnb_block_len(n);
    double total = 0.0;
    for (ptrdiff_t b = 0; b < nblk; ++b)
        total = total + pyopnb_block_part(t, w, b * B, (b + 1) * B < n ? (b + 1) * B : n);
    return total;
}

#endif
