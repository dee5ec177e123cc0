/* R's eigen() on a symmetric matrix, reduced to what fixes its eigenvectors'
 * signs: LAPACK's dsyevr path (dsytrd, then dstemr's MRRR) as reference
 * LAPACK 3.11 and reference BLAS compute it, step for step and operation for
 * operation, so that every intermediate is theirs to the bit.
 *
 * Why bit for bit: dstemr normalises each eigenvector of the tridiagonal
 * matrix T at a twist index r (dlar1v: z(r) = 1), chosen as argmin |gamma(r)|
 * of a twisted factorisation at the eigenvalue found by dqds. At that
 * eigenvalue the gammas are all rounding-sized, so which r wins (and so the
 * vector's sign) turns on the last bits of T, of the shifted representation
 * L D L' and of the eigenvalue.
 *
 * The algorithms are LAPACK's (Dhillon, Parlett and Voemel's MRRR; Parlett and
 * Marques' dqds; reference LAPACK is BSD-licensed, Univ. of Tennessee, Univ.
 * of California Berkeley, Univ. of Colorado Denver and NAG Ltd.). Arrays are
 * column-major and indices 0-based; loops keep LAPACK's order of operations.
 * Compiled without FMA contraction (setup.py), as reference BLAS is built.
 */
#ifndef PYOPNB_REFLAPACK_H
#define PYOPNB_REFLAPACK_H

#include <math.h>
#include <float.h>
#include <stdlib.h>
#include <string.h>

#define RL_A(a, lda, i, j) ((a)[(size_t)(j) * (size_t)(lda) + (size_t)(i)])

/* dlamch: 'Precision' (RL_EPS, what the eigensolver's routines read) is
 * epsilon * base = 2^-52; 'Epsilon' (dlarfg's) the unit roundoff 2^-53;
 * 'Safe minimum' the smallest normal number */
static const double RL_EPS = DBL_EPSILON;
static const double RL_UNIT_ROUNDOFF = DBL_EPSILON * 0.5;
static const double RL_SAFMIN = DBL_MIN;
static const double RL_OVERFLOW = DBL_MAX;

/* ---------------------------------------------------------------- BLAS -- */

static double rl_ddot(int n, const double* x, const double* y) {
    double t = 0.0;
    int m = n % 5, i;
    if (n <= 0) return 0.0;
    for (i = 0; i < m; i++) t = t + x[i] * y[i];
    if (n < 5) return t;
    for (i = m; i < n; i += 5)
        t = t + x[i] * y[i] + x[i + 1] * y[i + 1] + x[i + 2] * y[i + 2] + x[i + 3] * y[i + 3] + x[i + 4] * y[i + 4];
    return t;
}

static void rl_daxpy(int n, double a, const double* x, double* y) {
    int i;
    if (n <= 0 || a == 0.0) return;
    for (i = 0; i < n; i++) y[i] = y[i] + a * x[i];
}

static void rl_dscal(int n, double a, double* x) {
    int i;
    for (i = 0; i < n; i++) x[i] = a * x[i];
}

/* dnrm2 of BLAS 3.10+: Blue's algorithm with three accumulators */
static double rl_dnrm2(int n, const double* x) {
    const double tsml = ldexp(1.0, -511), tbig = ldexp(1.0, 486);
    const double ssml = ldexp(1.0, 537), sbig = ldexp(1.0, -538);
    double asml = 0.0, amed = 0.0, abig = 0.0, ax, scl, sumsq, ymin, ymax;
    int notbig = 1, i;
    if (n <= 0) return 0.0;
    for (i = 0; i < n; i++) {
        ax = fabs(x[i]);
        if (ax > tbig) {
            abig = abig + (ax * sbig) * (ax * sbig);
            notbig = 0;
        } else if (ax < tsml) {
            if (notbig) asml = asml + (ax * ssml) * (ax * ssml);
        } else {
            amed = amed + ax * ax;
        }
    }
    if (abig > 0.0) {
        if (amed > 0.0 || amed > DBL_MAX || amed != amed) abig = abig + (amed * sbig) * sbig;
        scl = 1.0 / sbig;
        sumsq = abig;
    } else if (asml > 0.0) {
        if (amed > 0.0 || amed > DBL_MAX || amed != amed) {
            amed = sqrt(amed);
            asml = sqrt(asml) / ssml;
            if (asml > amed) { ymin = amed; ymax = asml; } else { ymin = asml; ymax = amed; }
            scl = 1.0;
            sumsq = ymax * ymax * (1.0 + (ymin / ymax) * (ymin / ymax));
        } else {
            scl = 1.0 / ssml;
            sumsq = asml;
        }
    } else {
        scl = 1.0;
        sumsq = amed;
    }
    return scl * sqrt(sumsq);
}

/* y := beta y, as the level-2 BLAS begin (a zero beta clears y, NaNs included) */
static void rl_beta_y(int n, double beta, double* y) {
    int i;
    if (beta == 1.0) return;
    if (beta == 0.0) for (i = 0; i < n; i++) y[i] = 0.0;
    else for (i = 0; i < n; i++) y[i] = beta * y[i];
}

/* y := alpha A x + beta y, A [m, n], x with increment incx (dgemv 'N') */
static void rl_dgemv_n(int m, int n, double alpha, const double* a, int lda, const double* x, int incx, double beta,
                       double* y) {
    int i, j;
    double temp;
    if (m == 0 || n == 0 || (alpha == 0.0 && beta == 1.0)) return;
    rl_beta_y(m, beta, y);
    if (alpha == 0.0) return;
    for (j = 0; j < n; j++) {
        temp = alpha * x[(size_t)j * incx];
        for (i = 0; i < m; i++) y[i] = y[i] + temp * RL_A(a, lda, i, j);
    }
}

/* y := alpha A' x + beta y, A [m, n] (dgemv 'T') */
static void rl_dgemv_t(int m, int n, double alpha, const double* a, int lda, const double* x, double beta,
                       double* y) {
    int i, j;
    double temp;
    if (m == 0 || n == 0 || (alpha == 0.0 && beta == 1.0)) return;
    rl_beta_y(n, beta, y);
    if (alpha == 0.0) return;
    for (j = 0; j < n; j++) {
        temp = 0.0;
        for (i = 0; i < m; i++) temp = temp + RL_A(a, lda, i, j) * x[i];
        y[j] = y[j] + alpha * temp;
    }
}

/* y := alpha A x + beta y, A symmetric [n, n], lower triangle (dsymv 'L') */
static void rl_dsymv_l(int n, double alpha, const double* a, int lda, const double* x, double beta, double* y) {
    int i, j;
    double temp1, temp2;
    if (n == 0 || (alpha == 0.0 && beta == 1.0)) return;
    rl_beta_y(n, beta, y);
    if (alpha == 0.0) return;
    for (j = 0; j < n; j++) {
        temp1 = alpha * x[j];
        temp2 = 0.0;
        y[j] = y[j] + temp1 * RL_A(a, lda, j, j);
        for (i = j + 1; i < n; i++) {
            y[i] = y[i] + temp1 * RL_A(a, lda, i, j);
            temp2 = temp2 + RL_A(a, lda, i, j) * x[i];
        }
        y[j] = y[j] + alpha * temp2;
    }
}

/* A := alpha x y' + alpha y x' + A, lower triangle (dsyr2 'L') */
static void rl_dsyr2_l(int n, double alpha, const double* x, const double* y, double* a, int lda) {
    int i, j;
    double temp1, temp2;
    if (n == 0 || alpha == 0.0) return;
    for (j = 0; j < n; j++) {
        if (x[j] != 0.0 || y[j] != 0.0) {
            temp1 = alpha * y[j];
            temp2 = alpha * x[j];
            for (i = j; i < n; i++) RL_A(a, lda, i, j) = RL_A(a, lda, i, j) + x[i] * temp1 + y[i] * temp2;
        }
    }
}

/* C := alpha A B' + alpha B A' + beta C, lower triangle, A and B [n, k] (dsyr2k 'L' 'N') */
static void rl_dsyr2k_ln(int n, int k, double alpha, const double* a, int lda, const double* b, int ldb, double beta,
                         double* c, int ldc) {
    int i, j, l;
    double temp1, temp2;
    if (n == 0 || ((alpha == 0.0 || k == 0) && beta == 1.0)) return;
    for (j = 0; j < n; j++) {
        if (beta == 0.0) for (i = j; i < n; i++) RL_A(c, ldc, i, j) = 0.0;
        else if (beta != 1.0) for (i = j; i < n; i++) RL_A(c, ldc, i, j) = beta * RL_A(c, ldc, i, j);
        if (alpha == 0.0) continue;
        for (l = 0; l < k; l++) {
            if (RL_A(a, lda, j, l) != 0.0 || RL_A(b, ldb, j, l) != 0.0) {
                temp1 = alpha * RL_A(b, ldb, j, l);
                temp2 = alpha * RL_A(a, lda, j, l);
                for (i = j; i < n; i++)
                    RL_A(c, ldc, i, j) = RL_A(c, ldc, i, j) + RL_A(a, lda, i, l) * temp1 + RL_A(b, ldb, i, l) * temp2;
            }
        }
    }
}

/* ------------------------------------------- Householder tridiagonalisation -- */

static double rl_dlapy2(double x, double y) {
    double xa = fabs(x), ya = fabs(y), w, z;
    if (x != x) return x;
    if (y != y) return y;
    w = xa > ya ? xa : ya;
    z = xa < ya ? xa : ya;
    if (z == 0.0 || w > RL_OVERFLOW) return w;
    return w * sqrt(1.0 + (z / w) * (z / w));
}

/* an elementary reflector H = I - tau (1, v)(1, v)' with H (alpha, x) = (beta, 0) */
static void rl_dlarfg(int n, double* alpha, double* x, double* tau) {
    double xnorm, beta, safmin, rsafmn;
    int knt = 0, j;
    if (n <= 1) { *tau = 0.0; return; }
    xnorm = rl_dnrm2(n - 1, x);
    if (xnorm == 0.0) { *tau = 0.0; return; }
    beta = -copysign(rl_dlapy2(*alpha, xnorm), *alpha);
    safmin = RL_SAFMIN / RL_UNIT_ROUNDOFF;
    if (fabs(beta) < safmin) {
        rsafmn = 1.0 / safmin;
        do {
            knt++;
            rl_dscal(n - 1, rsafmn, x);
            beta = beta * rsafmn;
            *alpha = *alpha * rsafmn;
        } while (fabs(beta) < safmin && knt < 20);
        xnorm = rl_dnrm2(n - 1, x);
        beta = -copysign(rl_dlapy2(*alpha, xnorm), *alpha);
    }
    *tau = (beta - *alpha) / beta;
    rl_dscal(n - 1, 1.0 / (*alpha - beta), x);
    for (j = 0; j < knt; j++) beta = beta * safmin;
    *alpha = beta;
}

/* dsytd2, lower: A (n x n, lower triangle) = Q T Q' */
static void rl_dsytd2_l(int n, double* a, int lda, double* d, double* e, double* tau) {
    int i;
    double taui, alpha;
    for (i = 0; i < n - 1; i++) {
        rl_dlarfg(n - i - 1, &RL_A(a, lda, i + 1, i), &RL_A(a, lda, (i + 2 < n ? i + 2 : n - 1), i), &taui);
        e[i] = RL_A(a, lda, i + 1, i);
        if (taui != 0.0) {
            RL_A(a, lda, i + 1, i) = 1.0;
            rl_dsymv_l(n - i - 1, taui, &RL_A(a, lda, i + 1, i + 1), lda, &RL_A(a, lda, i + 1, i), 0.0, &tau[i]);
            alpha = -(0.5 * taui * rl_ddot(n - i - 1, &tau[i], &RL_A(a, lda, i + 1, i)));
            rl_daxpy(n - i - 1, alpha, &RL_A(a, lda, i + 1, i), &tau[i]);
            rl_dsyr2_l(n - i - 1, -1.0, &RL_A(a, lda, i + 1, i), &tau[i], &RL_A(a, lda, i + 1, i + 1), lda);
            RL_A(a, lda, i + 1, i) = e[i];
        }
        d[i] = RL_A(a, lda, i, i);
        tau[i] = taui;
    }
    d[n - 1] = RL_A(a, lda, n - 1, n - 1);
}

/* dlatrd, lower: the first nb columns of A reduced; w [n, nb] (ldw) */
static void rl_dlatrd_l(int n, int nb, double* a, int lda, double* e, double* tau, double* w, int ldw) {
    int i;
    double alpha;
    for (i = 0; i < nb; i++) {
        rl_dgemv_n(n - i, i, -1.0, &RL_A(a, lda, i, 0), lda, &RL_A(w, ldw, i, 0), ldw, 1.0, &RL_A(a, lda, i, i));
        rl_dgemv_n(n - i, i, -1.0, &RL_A(w, ldw, i, 0), ldw, &RL_A(a, lda, i, 0), lda, 1.0, &RL_A(a, lda, i, i));
        if (i < n - 1) {
            rl_dlarfg(n - i - 1, &RL_A(a, lda, i + 1, i), &RL_A(a, lda, (i + 2 < n ? i + 2 : n - 1), i), &tau[i]);
            e[i] = RL_A(a, lda, i + 1, i);
            RL_A(a, lda, i + 1, i) = 1.0;
            rl_dsymv_l(n - i - 1, 1.0, &RL_A(a, lda, i + 1, i + 1), lda, &RL_A(a, lda, i + 1, i), 0.0,
                       &RL_A(w, ldw, i + 1, i));
            rl_dgemv_t(n - i - 1, i, 1.0, &RL_A(w, ldw, i + 1, 0), ldw, &RL_A(a, lda, i + 1, i), 0.0,
                       &RL_A(w, ldw, 0, i));
            rl_dgemv_n(n - i - 1, i, -1.0, &RL_A(a, lda, i + 1, 0), lda, &RL_A(w, ldw, 0, i), 1, 1.0,
                       &RL_A(w, ldw, i + 1, i));
            rl_dgemv_t(n - i - 1, i, 1.0, &RL_A(a, lda, i + 1, 0), lda, &RL_A(a, lda, i + 1, i), 0.0,
                       &RL_A(w, ldw, 0, i));
            rl_dgemv_n(n - i - 1, i, -1.0, &RL_A(w, ldw, i + 1, 0), ldw, &RL_A(w, ldw, 0, i), 1, 1.0,
                       &RL_A(w, ldw, i + 1, i));
            rl_dscal(n - i - 1, tau[i], &RL_A(w, ldw, i + 1, i));
            alpha = -(0.5 * tau[i] * rl_ddot(n - i - 1, &RL_A(w, ldw, i + 1, i), &RL_A(a, lda, i + 1, i)));
            rl_daxpy(n - i - 1, alpha, &RL_A(a, lda, i + 1, i), &RL_A(w, ldw, i + 1, i));
        }
    }
}

/* dsytrd, lower, as dsyevr calls it: R's eigen asks dsyevr for its optimal
 * workspace, (32 + 1) n, of which dsytrd gets 28 n, so its blocks are 28
 * columns wide (its crossover to the unblocked code stays at 32). work [n, 28] */
#define RL_SYTRD_NX 32
#define RL_SYTRD_NB 28
static void rl_dsytrd_l(int n, double* a, int lda, double* d, double* e, double* tau, double* work) {
    int i = 0, j, nb = RL_SYTRD_NB, nx = n;
    if (n <= 0) return;
    if (RL_SYTRD_NX < n) nx = RL_SYTRD_NX;
    for (i = 0; i < n - nx; i += nb) {
        rl_dlatrd_l(n - i, nb, &RL_A(a, lda, i, i), lda, &e[i], &tau[i], work, n);
        rl_dsyr2k_ln(n - i - nb, nb, -1.0, &RL_A(a, lda, i + nb, i), lda, &work[nb], n, 1.0,
                     &RL_A(a, lda, i + nb, i + nb), lda);
        for (j = i; j < i + nb; j++) {
            RL_A(a, lda, j + 1, j) = e[j];
            d[j] = RL_A(a, lda, j, j);
        }
    }
    rl_dsytd2_l(n - i, &RL_A(a, lda, i, i), lda, &d[i], &e[i], &tau[i]);
}

/* ------------------------------------------------------------------ dqds --
 * dlasq2..dlasq6: the eigenvalues of L D L' (a qd array) to high relative
 * accuracy. Z is 1-based here, as in LAPACK, so that each index reads as
 * LAPACK's: Z(k) is Z[k]. */

static double rl_min(double a, double b) { return a < b ? a : b; }
static double rl_max(double a, double b) { return a > b ? a : b; }

/* dlasq4's estimate of the norm squared the lower indices add: a2 grows by
 * b2's running product of ratios until it is negligible. 0 where a ratio
 * above 1 voids the estimate: dlasq4 then returns and keeps its last shift. */
static int rl_dlasq4_tail(const double* Z, int from, int last, double* a2, double* b2) {
    const double hundrd = 100.0, cnst1 = 0.5630;
    int i4;
    double b1;
    for (i4 = from; i4 >= last; i4 -= 4) {
        if (*b2 == 0.0) break;
        b1 = *b2;
        if (Z[i4] > Z[i4 - 2]) return 0;
        *b2 = *b2 * (Z[i4] / Z[i4 - 2]);
        *a2 = *a2 + *b2;
        if (hundrd * rl_max(*b2, b1) < *a2 || cnst1 < *a2) break;
    }
    return 1;
}

static void rl_dlasq4(int i0, int n0, const double* Z, int pp, int n0in, double dmin, double dmin1, double dmin2,
                      double dn, double dn1, double dn2, double* tau, int* ttype, double* g) {
    const double cnst1 = 0.5630, cnst2 = 1.010, cnst3 = 1.050;
    const double qurtr = 0.250, third = 0.3330, half = 0.50, hundrd = 100.0;
    int i4, nn, np;
    double a2, b1, b2, gam, gap1, gap2, s = 0.0;
    if (dmin <= 0.0) { *tau = -dmin; *ttype = -1; return; }
    nn = 4 * n0 + pp;
    if (n0in == n0) {
        if (dmin == dn || dmin == dn1) {
            b1 = sqrt(Z[nn - 3]) * sqrt(Z[nn - 5]);
            b2 = sqrt(Z[nn - 7]) * sqrt(Z[nn - 9]);
            a2 = Z[nn - 7] + Z[nn - 5];
            if (dmin == dn && dmin1 == dn1) {
                gap2 = dmin2 - a2 - dmin2 * qurtr;
                if (gap2 > 0.0 && gap2 > b2) gap1 = a2 - dn - (b2 / gap2) * b2;
                else gap1 = a2 - dn - (b1 + b2);
                if (gap1 > 0.0 && gap1 > b1) {
                    s = rl_max(dn - (b1 / gap1) * b1, half * dmin);
                    *ttype = -2;
                } else {
                    s = 0.0;
                    if (dn > b1) s = dn - b1;
                    if (a2 > (b1 + b2)) s = rl_min(s, a2 - (b1 + b2));
                    s = rl_max(s, third * dmin);
                    *ttype = -3;
                }
            } else {
                *ttype = -4;
                s = qurtr * dmin;
                if (dmin == dn) {
                    gam = dn;
                    a2 = 0.0;
                    if (Z[nn - 5] > Z[nn - 7]) return;
                    b2 = Z[nn - 5] / Z[nn - 7];
                    np = nn - 9;
                } else {
                    np = nn - 2 * pp;
                    gam = dn1;
                    if (Z[np - 4] > Z[np - 2]) return;
                    a2 = Z[np - 4] / Z[np - 2];
                    if (Z[nn - 9] > Z[nn - 11]) return;
                    b2 = Z[nn - 9] / Z[nn - 11];
                    np = nn - 13;
                }
                a2 = a2 + b2;
                if (!rl_dlasq4_tail(Z, np, 4 * i0 - 1 + pp, &a2, &b2)) return;
                a2 = cnst3 * a2;
                if (a2 < cnst1) s = gam * (1.0 - sqrt(a2)) / (1.0 + a2);
            }
        } else if (dmin == dn2) {
            *ttype = -5;
            s = qurtr * dmin;
            np = nn - 2 * pp;
            b1 = Z[np - 2];
            b2 = Z[np - 6];
            gam = dn2;
            if (Z[np - 8] > b2 || Z[np - 4] > b1) return;
            a2 = (Z[np - 8] / b2) * (1.0 + Z[np - 4] / b1);
            if (n0 - i0 > 2) {
                b2 = Z[nn - 13] / Z[nn - 15];
                a2 = a2 + b2;
                if (!rl_dlasq4_tail(Z, nn - 17, 4 * i0 - 1 + pp, &a2, &b2)) return;
                a2 = cnst3 * a2;
            }
            if (a2 < cnst1) s = gam * (1.0 - sqrt(a2)) / (1.0 + a2);
        } else {
            if (*ttype == -6) *g = *g + third * (1.0 - *g);
            else if (*ttype == -18) *g = qurtr * third;
            else *g = qurtr;
            s = *g * dmin;
            *ttype = -6;
        }
    } else if (n0in == n0 + 1) {
        if (dmin1 == dn1 && dmin2 == dn2) {
            *ttype = -7;
            s = third * dmin1;
            if (Z[nn - 5] > Z[nn - 7]) return;
            b1 = Z[nn - 5] / Z[nn - 7];
            b2 = b1;
            if (b2 != 0.0) {
                for (i4 = 4 * n0 - 9 + pp; i4 >= 4 * i0 - 1 + pp; i4 -= 4) {
                    a2 = b1;
                    if (Z[i4] > Z[i4 - 2]) return;
                    b1 = b1 * (Z[i4] / Z[i4 - 2]);
                    b2 = b2 + b1;
                    if (hundrd * rl_max(b1, a2) < b2) break;
                }
            }
            b2 = sqrt(cnst3 * b2);
            a2 = dmin1 / (1.0 + b2 * b2);
            gap2 = half * dmin2 - a2;
            if (gap2 > 0.0 && gap2 > b2 * a2) {
                s = rl_max(s, a2 * (1.0 - cnst2 * a2 * (b2 / gap2) * b2));
            } else {
                s = rl_max(s, a2 * (1.0 - cnst2 * b2));
                *ttype = -8;
            }
        } else {
            s = qurtr * dmin1;
            if (dmin1 == dn1) s = half * dmin1;
            *ttype = -9;
        }
    } else if (n0in == n0 + 2) {
        if (dmin2 == dn2 && 2.0 * Z[nn - 5] < Z[nn - 7]) {
            *ttype = -10;
            s = third * dmin2;
            if (Z[nn - 5] > Z[nn - 7]) return;
            b1 = Z[nn - 5] / Z[nn - 7];
            b2 = b1;
            if (b2 != 0.0) {
                for (i4 = 4 * n0 - 9 + pp; i4 >= 4 * i0 - 1 + pp; i4 -= 4) {
                    if (Z[i4] > Z[i4 - 2]) return;
                    b1 = b1 * (Z[i4] / Z[i4 - 2]);
                    b2 = b2 + b1;
                    if (hundrd * b1 < b2) break;
                }
            }
            b2 = sqrt(cnst3 * b2);
            a2 = dmin2 / (1.0 + b2 * b2);
            gap2 = Z[nn - 7] + Z[nn - 9] - sqrt(Z[nn - 11]) * sqrt(Z[nn - 9]) - a2;
            if (gap2 > 0.0 && gap2 > b2 * a2) s = rl_max(s, a2 * (1.0 - cnst2 * a2 * (b2 / gap2) * b2));
            else s = rl_max(s, a2 * (1.0 - cnst2 * b2));
        } else {
            s = qurtr * dmin2;
            *ttype = -11;
        }
    } else if (n0in > n0 + 2) {
        s = 0.0;
        *ttype = -12;
    }
    *tau = s;
}

/* one dqds transform in ping-pong form (IEEE arithmetic) */
static void rl_dlasq5(int i0, int n0, double* Z, int pp, double* tau_io, double sigma, double* dmin, double* dmin1,
                      double* dmin2, double* dn, double* dnm1, double* dnm2, double eps) {
    int j4, j4p2;
    double d, emin, temp, dthresh, tau = *tau_io;
    if ((n0 - i0 - 1) <= 0) return;
    dthresh = eps * (sigma + tau);
    if (tau < dthresh * 0.5) tau = 0.0;
    *tau_io = tau;
    j4 = 4 * i0 + pp - 3;
    emin = Z[j4 + 4];
    d = Z[j4] - tau;
    *dmin = d;
    *dmin1 = -Z[j4];
    if (pp == 0) {
        for (j4 = 4 * i0; j4 <= 4 * (n0 - 3); j4 += 4) {
            Z[j4 - 2] = d + Z[j4 - 1];
            temp = Z[j4 + 1] / Z[j4 - 2];
            d = d * temp - tau;
            if (tau == 0.0 && d < dthresh) d = 0.0;
            *dmin = rl_min(*dmin, d);
            Z[j4] = Z[j4 - 1] * temp;
            emin = rl_min(Z[j4], emin);
        }
    } else {
        for (j4 = 4 * i0; j4 <= 4 * (n0 - 3); j4 += 4) {
            Z[j4 - 3] = d + Z[j4];
            temp = Z[j4 + 2] / Z[j4 - 3];
            d = d * temp - tau;
            if (tau == 0.0 && d < dthresh) d = 0.0;
            *dmin = rl_min(*dmin, d);
            Z[j4 - 1] = Z[j4] * temp;
            emin = rl_min(Z[j4 - 1], emin);
        }
    }
    *dnm2 = d;
    *dmin2 = *dmin;
    j4 = 4 * (n0 - 2) - pp;
    j4p2 = j4 + 2 * pp - 1;
    Z[j4 - 2] = *dnm2 + Z[j4p2];
    Z[j4] = Z[j4p2 + 2] * (Z[j4p2] / Z[j4 - 2]);
    *dnm1 = Z[j4p2 + 2] * (*dnm2 / Z[j4 - 2]) - tau;
    *dmin = rl_min(*dmin, *dnm1);
    *dmin1 = *dmin;
    j4 = j4 + 4;
    j4p2 = j4 + 2 * pp - 1;
    Z[j4 - 2] = *dnm1 + Z[j4p2];
    Z[j4] = Z[j4p2 + 2] * (Z[j4p2] / Z[j4 - 2]);
    *dn = Z[j4p2 + 2] * (*dnm1 / Z[j4 - 2]) - tau;
    *dmin = rl_min(*dmin, *dn);
    Z[j4 + 2] = *dn;
    Z[4 * n0 - pp] = emin;
}

/* one of dlasq6's two unrolled last steps: the next d from dprev, at j4 */
static double rl_dqd_tail(double* Z, int j4, int pp, double dprev, double safmin, double* dmin, double* emin) {
    int j4p2 = j4 + 2 * pp - 1;
    double temp, dnext;
    Z[j4 - 2] = dprev + Z[j4p2];
    if (Z[j4 - 2] == 0.0) {
        Z[j4] = 0.0;
        dnext = Z[j4p2 + 2];
        *dmin = dnext;
        *emin = 0.0;
    } else if (safmin * Z[j4p2 + 2] < Z[j4 - 2] && safmin * Z[j4 - 2] < Z[j4p2 + 2]) {
        temp = Z[j4p2 + 2] / Z[j4 - 2];
        Z[j4] = Z[j4p2] * temp;
        dnext = dprev * temp;
    } else {
        Z[j4] = Z[j4p2 + 2] * (Z[j4p2] / Z[j4 - 2]);
        dnext = Z[j4p2 + 2] * (dprev / Z[j4 - 2]);
    }
    *dmin = rl_min(*dmin, dnext);
    return dnext;
}

/* one dqd transform (no shift), guarding against underflow */
static void rl_dlasq6(int i0, int n0, double* Z, int pp, double* dmin, double* dmin1, double* dmin2, double* dn,
                      double* dnm1, double* dnm2) {
    int j4;
    double d, emin, temp, safmin = RL_SAFMIN;
    if ((n0 - i0 - 1) <= 0) return;
    j4 = 4 * i0 + pp - 3;
    emin = Z[j4 + 4];
    d = Z[j4];
    *dmin = d;
    for (j4 = 4 * i0; j4 <= 4 * (n0 - 3); j4 += 4) {
        int a = pp == 0 ? j4 - 2 : j4 - 3, b = pp == 0 ? j4 - 1 : j4, c = pp == 0 ? j4 + 1 : j4 + 2,
            o = pp == 0 ? j4 : j4 - 1;
        Z[a] = d + Z[b];
        if (Z[a] == 0.0) {
            Z[o] = 0.0;
            d = Z[c];
            *dmin = d;
            emin = 0.0;
        } else if (safmin * Z[c] < Z[a] && safmin * Z[a] < Z[c]) {
            temp = Z[c] / Z[a];
            Z[o] = Z[b] * temp;
            d = d * temp;
        } else {
            Z[o] = Z[c] * (Z[b] / Z[a]);
            d = Z[c] * (d / Z[a]);
        }
        *dmin = rl_min(*dmin, d);
        emin = rl_min(emin, Z[o]);
    }
    *dnm2 = d;
    *dmin2 = *dmin;
    j4 = 4 * (n0 - 2) - pp;
    *dnm1 = rl_dqd_tail(Z, j4, pp, *dnm2, safmin, dmin, &emin);
    *dmin1 = *dmin;
    j4 = j4 + 4;
    *dn = rl_dqd_tail(Z, j4, pp, *dnm1, safmin, dmin, &emin);
    *dmin = rl_min(*dmin, *dn);
    Z[j4 + 2] = *dn;
    Z[4 * n0 - pp] = emin;
}

/* the state dlasq2 hands each dlasq3 call */
typedef struct {
    int i0, n0, pp, nfail, iter, ndiv, ttype;
    double dmin, sigma, desig, qmax, dmin1, dmin2, dn, dn1, dn2, g, tau;
} rl_dqds;

static void rl_reverse_qd(double* Z, int i0, int n0, int full) {
    int ipn4 = 4 * (i0 + n0), i4;
    double temp;
    for (i4 = 4 * i0; i4 <= 2 * (i0 + n0 - 1); i4 += 4) {
        temp = Z[i4 - 3]; Z[i4 - 3] = Z[ipn4 - i4 - 3]; Z[ipn4 - i4 - 3] = temp;
        if (full) { temp = Z[i4 - 2]; Z[i4 - 2] = Z[ipn4 - i4 - 2]; Z[ipn4 - i4 - 2] = temp; }
        temp = Z[i4 - 1]; Z[i4 - 1] = Z[ipn4 - i4 - 5]; Z[ipn4 - i4 - 5] = temp;
        if (full) { temp = Z[i4]; Z[i4] = Z[ipn4 - i4 - 4]; Z[ipn4 - i4 - 4] = temp; }
    }
}

/* dlasq3: deflations, a shift and one dqds step */
static void rl_dlasq3(double* Z, rl_dqds* q) {
    const double cbias = 1.50, eps = RL_EPS, tol = RL_EPS * 100.0, tol2 = tol * tol;
    int n0in = q->n0, nn;
    double s, t;
    for (;;) {
        if (q->n0 < q->i0) return;
        if (q->n0 != q->i0) {
            nn = 4 * q->n0 + q->pp;
            if (q->n0 != q->i0 + 1) {
                if (Z[nn - 5] > tol2 * (q->sigma + Z[nn - 3]) && Z[nn - 2 * q->pp - 4] > tol2 * Z[nn - 7]) {
                    if (Z[nn - 9] > tol2 * q->sigma && Z[nn - 2 * q->pp - 8] > tol2 * Z[nn - 11]) break;
                    goto two;
                }
                goto one;
            }
        two:
            if (Z[nn - 3] > Z[nn - 7]) { s = Z[nn - 3]; Z[nn - 3] = Z[nn - 7]; Z[nn - 7] = s; }
            t = 0.5 * ((Z[nn - 7] - Z[nn - 3]) + Z[nn - 5]);
            if (Z[nn - 5] > Z[nn - 3] * tol2 && t != 0.0) {
                s = Z[nn - 3] * (Z[nn - 5] / t);
                if (s <= t) s = Z[nn - 3] * (Z[nn - 5] / (t * (1.0 + sqrt(1.0 + s / t))));
                else s = Z[nn - 3] * (Z[nn - 5] / (t + sqrt(t) * sqrt(t + s)));
                t = Z[nn - 7] + (s + Z[nn - 5]);
                Z[nn - 3] = Z[nn - 3] * (Z[nn - 7] / t);
                Z[nn - 7] = t;
            }
            Z[4 * q->n0 - 7] = Z[nn - 7] + q->sigma;
            Z[4 * q->n0 - 3] = Z[nn - 3] + q->sigma;
            q->n0 -= 2;
            continue;
        }
    one:
        Z[4 * q->n0 - 3] = Z[4 * q->n0 + q->pp - 3] + q->sigma;
        q->n0 -= 1;
    }
    if (q->pp == 2) q->pp = 0;
    if (q->dmin <= 0.0 || q->n0 < n0in) {
        int i0 = q->i0, n0 = q->n0, pp = q->pp;
        if (cbias * Z[4 * i0 + pp - 3] < Z[4 * n0 + pp - 3]) {
            rl_reverse_qd(Z, i0, n0, 1);
            if (n0 - i0 <= 4) {
                Z[4 * n0 + pp - 1] = Z[4 * i0 + pp - 1];
                Z[4 * n0 - pp] = Z[4 * i0 - pp];
            }
            q->dmin2 = rl_min(q->dmin2, Z[4 * n0 + pp - 1]);
            Z[4 * n0 + pp - 1] = rl_min(rl_min(Z[4 * n0 + pp - 1], Z[4 * i0 + pp - 1]), Z[4 * i0 + pp + 3]);
            Z[4 * n0 - pp] = rl_min(rl_min(Z[4 * n0 - pp], Z[4 * i0 - pp]), Z[4 * i0 - pp + 4]);
            q->qmax = rl_max(rl_max(q->qmax, Z[4 * i0 + pp - 3]), Z[4 * i0 + pp + 1]);
            q->dmin = -0.0;
        }
    }
    rl_dlasq4(q->i0, q->n0, Z, q->pp, n0in, q->dmin, q->dmin1, q->dmin2, q->dn, q->dn1, q->dn2, &q->tau, &q->ttype,
              &q->g);
    for (;;) {
        rl_dlasq5(q->i0, q->n0, Z, q->pp, &q->tau, q->sigma, &q->dmin, &q->dmin1, &q->dmin2, &q->dn, &q->dn1, &q->dn2,
                  eps);
        q->ndiv += q->n0 - q->i0 + 2;
        q->iter += 1;
        if (q->dmin >= 0.0 && q->dmin1 >= 0.0) goto done;
        if (q->dmin < 0.0 && q->dmin1 > 0.0 && Z[4 * (q->n0 - 1) - q->pp] < tol * (q->sigma + q->dn1) &&
            fabs(q->dn) < tol * q->sigma) {
            Z[4 * (q->n0 - 1) - q->pp + 2] = 0.0;
            q->dmin = 0.0;
            goto done;
        }
        if (q->dmin < 0.0) {
            q->nfail += 1;
            if (q->ttype < -22) q->tau = 0.0;
            else if (q->dmin1 > 0.0) { q->tau = (q->tau + q->dmin) * (1.0 - 2.0 * eps); q->ttype -= 11; }
            else { q->tau = 0.250 * q->tau; q->ttype -= 12; }
            continue;
        }
        if (q->dmin != q->dmin) {
            if (q->tau == 0.0) break;
            q->tau = 0.0;
            continue;
        }
        break;
    }
    rl_dlasq6(q->i0, q->n0, Z, q->pp, &q->dmin, &q->dmin1, &q->dmin2, &q->dn, &q->dn1, &q->dn2);
    q->ndiv += q->n0 - q->i0 + 2;
    q->iter += 1;
    q->tau = 0.0;
done:
    if (q->tau < q->sigma) {
        q->desig = q->desig + q->tau;
        t = q->sigma + q->desig;
        q->desig = q->desig - (t - q->sigma);
    } else {
        t = q->sigma + q->tau;
        q->desig = q->sigma - (t - q->tau) + q->desig;
    }
    q->sigma = t;
}

static int rl_cmp_desc(const void* a, const void* b) {
    double x = *(const double*)a, y = *(const double*)b;
    return (x < y) - (x > y);
}

/* dlasq2: z (4n, 0-based) holds q1, e1, q2, e2, ...; on return z[0..n-1]
 * the eigenvalues, decreasing. Returns LAPACK's info (0: success). */
static int rl_dlasq2(int n, double* z) {
    const double cbias = 1.50, tol = RL_EPS * 100.0, tol2 = tol * tol, safmin = RL_SAFMIN;
    double* Z = z - 1;
    double d, e, emin, qmax, zmax, trace, temp, dee, deemin, emax, qmin, oldemn, s, t, tempq, tempe;
    int k, i4, kmin, nbig, iwhila, iwhilb, splt, i1, n1;
    rl_dqds q;
    if (n < 0) return -1;
    if (n == 0) return 0;
    if (n == 1) return Z[1] < 0.0 ? -201 : 0;
    if (n == 2) {
        if (Z[1] < 0.0) return -201;
        if (Z[2] < 0.0) return -202;
        if (Z[3] < 0.0) return -203;
        if (Z[3] > Z[1]) { d = Z[3]; Z[3] = Z[1]; Z[1] = d; }
        Z[5] = Z[1] + Z[2] + Z[3];
        if (Z[2] > Z[3] * tol2) {
            t = 0.5 * ((Z[1] - Z[3]) + Z[2]);
            s = Z[3] * (Z[2] / t);
            if (s <= t) s = Z[3] * (Z[2] / (t * (1.0 + sqrt(1.0 + s / t))));
            else s = Z[3] * (Z[2] / (t + sqrt(t) * sqrt(t + s)));
            t = Z[1] + (s + Z[2]);
            Z[3] = Z[3] * (Z[1] / t);
            Z[1] = t;
        }
        Z[2] = Z[3];
        Z[6] = Z[2] + Z[1];
        return 0;
    }
    Z[2 * n] = 0.0;
    emin = Z[2];
    qmax = 0.0;
    zmax = 0.0;
    d = 0.0;
    e = 0.0;
    for (k = 1; k <= 2 * (n - 1); k += 2) {
        if (Z[k] < 0.0) return -(200 + k);
        if (Z[k + 1] < 0.0) return -(200 + k + 1);
        d = d + Z[k];
        e = e + Z[k + 1];
        qmax = rl_max(qmax, Z[k]);
        emin = rl_min(emin, Z[k + 1]);
        zmax = rl_max(rl_max(qmax, zmax), Z[k + 1]);
    }
    if (Z[2 * n - 1] < 0.0) return -(200 + 2 * n - 1);
    d = d + Z[2 * n - 1];
    qmax = rl_max(qmax, Z[2 * n - 1]);
    zmax = rl_max(qmax, zmax);
    (void)zmax;
    if (e == 0.0) {
        for (k = 2; k <= n; k++) Z[k] = Z[2 * k - 1];
        qsort(z, (size_t)n, sizeof(double), rl_cmp_desc);
        Z[2 * n - 1] = d;
        return 0;
    }
    trace = d + e;
    if (trace == 0.0) { Z[2 * n - 1] = 0.0; return 0; }
    for (k = 2 * n; k >= 2; k -= 2) {
        Z[2 * k] = 0.0;
        Z[2 * k - 1] = Z[k];
        Z[2 * k - 2] = 0.0;
        Z[2 * k - 3] = Z[k - 1];
    }
    q.i0 = 1;
    q.n0 = n;
    if (cbias * Z[4 * q.i0 - 3] < Z[4 * q.n0 - 3]) rl_reverse_qd(Z, q.i0, q.n0, 0);
    q.pp = 0;
    for (k = 1; k <= 2; k++) {
        int pp = q.pp, i0 = q.i0, n0 = q.n0;
        d = Z[4 * n0 + pp - 3];
        for (i4 = 4 * (n0 - 1) + pp; i4 >= 4 * i0 + pp; i4 -= 4) {
            if (Z[i4 - 1] <= tol2 * d) { Z[i4 - 1] = -0.0; d = Z[i4 - 3]; }
            else d = Z[i4 - 3] * (d / (d + Z[i4 - 1]));
        }
        emin = Z[4 * i0 + pp + 1];
        d = Z[4 * i0 + pp - 3];
        for (i4 = 4 * i0 + pp; i4 <= 4 * (n0 - 1) + pp; i4 += 4) {
            Z[i4 - 2 * pp - 2] = d + Z[i4 - 1];
            if (Z[i4 - 1] <= tol2 * d) {
                Z[i4 - 1] = -0.0;
                Z[i4 - 2 * pp - 2] = d;
                Z[i4 - 2 * pp] = 0.0;
                d = Z[i4 + 1];
            } else if (safmin * Z[i4 + 1] < Z[i4 - 2 * pp - 2] && safmin * Z[i4 - 2 * pp - 2] < Z[i4 + 1]) {
                temp = Z[i4 + 1] / Z[i4 - 2 * pp - 2];
                Z[i4 - 2 * pp] = Z[i4 - 1] * temp;
                d = d * temp;
            } else {
                Z[i4 - 2 * pp] = Z[i4 + 1] * (Z[i4 - 1] / Z[i4 - 2 * pp - 2]);
                d = Z[i4 + 1] * (d / Z[i4 - 2 * pp - 2]);
            }
            emin = rl_min(emin, Z[i4 - 2 * pp]);
        }
        Z[4 * n0 - pp - 2] = d;
        qmax = Z[4 * i0 - pp - 2];
        for (i4 = 4 * i0 - pp + 2; i4 <= 4 * n0 - pp - 2; i4 += 4) qmax = rl_max(qmax, Z[i4]);
        q.pp = 1 - pp;
    }
    q.ttype = 0;
    q.dmin1 = q.dmin2 = q.dn = q.dn1 = q.dn2 = q.g = q.tau = 0.0;
    q.iter = 2;
    q.nfail = 0;
    q.ndiv = 2 * (q.n0 - q.i0);
    q.qmax = qmax;
    for (iwhila = 1; iwhila <= n + 1; iwhila++) {
        if (q.n0 < 1) goto finished;
        q.desig = 0.0;
        q.sigma = q.n0 == n ? 0.0 : -Z[4 * q.n0 - 1];
        if (q.sigma < 0.0) return 1;
        emax = 0.0;
        emin = q.n0 > q.i0 ? fabs(Z[4 * q.n0 - 5]) : 0.0;
        qmin = Z[4 * q.n0 - 3];
        q.qmax = qmin;
        for (i4 = 4 * q.n0; i4 >= 8; i4 -= 4) {
            if (Z[i4 - 5] <= 0.0) break;
            if (qmin >= 4.0 * emax) {
                qmin = rl_min(qmin, Z[i4 - 3]);
                emax = rl_max(emax, Z[i4 - 5]);
            }
            q.qmax = rl_max(q.qmax, Z[i4 - 7] + Z[i4 - 5]);
            emin = rl_min(emin, Z[i4 - 5]);
        }
        if (i4 < 8) i4 = 4;
        q.i0 = i4 / 4;
        q.pp = 0;
        if (q.n0 - q.i0 > 1) {
            dee = Z[4 * q.i0 - 3];
            deemin = dee;
            kmin = q.i0;
            for (i4 = 4 * q.i0 + 1; i4 <= 4 * q.n0 - 3; i4 += 4) {
                dee = Z[i4] * (dee / (dee + Z[i4 - 2]));
                if (dee <= deemin) { deemin = dee; kmin = (i4 + 3) / 4; }
            }
            if ((kmin - q.i0) * 2 < q.n0 - kmin && deemin <= 0.5 * Z[4 * q.n0 - 3]) {
                q.pp = 2;
                rl_reverse_qd(Z, q.i0, q.n0, 1);
            }
        }
        q.dmin = -rl_max(0.0, qmin - 2.0 * sqrt(qmin) * sqrt(emax));
        nbig = 100 * (q.n0 - q.i0 + 1);
        for (iwhilb = 1; iwhilb <= nbig; iwhilb++) {
            if (q.i0 > q.n0) goto next_block;
            rl_dlasq3(Z, &q);
            q.pp = 1 - q.pp;
            if (q.pp == 0 && q.n0 - q.i0 >= 3) {
                if (Z[4 * q.n0] <= tol2 * q.qmax || Z[4 * q.n0 - 1] <= tol2 * q.sigma) {
                    splt = q.i0 - 1;
                    q.qmax = Z[4 * q.i0 - 3];
                    emin = Z[4 * q.i0 - 1];
                    oldemn = Z[4 * q.i0];
                    for (i4 = 4 * q.i0; i4 <= 4 * (q.n0 - 3); i4 += 4) {
                        if (Z[i4] <= tol2 * Z[i4 - 3] || Z[i4 - 1] <= tol2 * q.sigma) {
                            Z[i4 - 1] = -q.sigma;
                            splt = i4 / 4;
                            q.qmax = 0.0;
                            emin = Z[i4 + 3];
                            oldemn = Z[i4 + 4];
                        } else {
                            q.qmax = rl_max(q.qmax, Z[i4 + 1]);
                            emin = rl_min(emin, Z[i4 - 1]);
                            oldemn = rl_min(oldemn, Z[i4]);
                        }
                    }
                    Z[4 * q.n0 - 1] = emin;
                    Z[4 * q.n0] = oldemn;
                    q.i0 = splt + 1;
                }
            }
        }
        /* the iteration limit: LAPACK restores the shift and returns 2 */
        i1 = q.i0;
        n1 = q.n0;
        (void)n1;
        for (;;) {
            tempq = Z[4 * q.i0 - 3];
            Z[4 * q.i0 - 3] = Z[4 * q.i0 - 3] + q.sigma;
            for (k = q.i0 + 1; k <= q.n0; k++) {
                tempe = Z[4 * k - 5];
                Z[4 * k - 5] = Z[4 * k - 5] * (tempq / Z[4 * k - 7]);
                tempq = Z[4 * k - 3];
                Z[4 * k - 3] = Z[4 * k - 3] + q.sigma + tempe - Z[4 * k - 5];
            }
            if (i1 > 1) {
                n1 = i1 - 1;
                while (i1 >= 2 && Z[4 * i1 - 5] >= 0.0) i1 -= 1;
                q.sigma = -Z[4 * n1 - 1];
                continue;
            }
            break;
        }
        for (k = 1; k <= n; k++) {
            Z[2 * k - 1] = Z[4 * k - 3];
            Z[2 * k] = k < q.n0 ? Z[4 * k - 1] : 0.0;
        }
        return 2;
    next_block:;
    }
    return 3;
finished:
    for (k = 2; k <= n; k++) Z[k] = Z[4 * k - 3];
    qsort(z, (size_t)n, sizeof(double), rl_cmp_desc);
    return 0;
}

/* ------------------------------------------------------------------ MRRR --
 * dstemr's path for all eigenpairs of a tridiagonal T: dlarre (root
 * representations L D L' = T - sigma I per block, eigenvalues by dqds) and
 * dlarrv (the representation tree; each vector by dlar1v's twisted
 * factorisation). Arrays keep LAPACK's 1-based indices through pointers
 * offset by one (X[1] is the first entry). */

/* dlaneg: the Sturm count of L D L' - sigma I, twisted at r */
/* one block of dlaneg's recurrence: x = A(j) + t, t = (t / x) B(j) - sigma
 * over j = from..to (step +1 or -1), counting the negative x; ``guard``
 * takes a NaN quotient as 1, as LAPACK's second, careful pass does */
static int rl_neg_run(const double* A, const double* B, int from, int to, int step, double sigma, double* t,
                      int guard) {
    int neg = 0, j;
    double x, tmp;
    for (j = from; step > 0 ? j <= to : j >= to; j += step) {
        x = A[j] + *t;
        if (x < 0.0) neg++;
        tmp = *t / x;
        if (guard && tmp != tmp) tmp = 1.0;
        *t = tmp * B[j] - sigma;
    }
    return neg;
}

static int rl_dlaneg(int n, const double* D, const double* LLD, double sigma, double pivmin, int r) {
    const int blklen = 128;
    int negcnt = 0, bj, neg, jend;
    double t = -sigma, p, bsav, gamma;
    (void)pivmin;
    for (bj = 1; bj <= r - 1; bj += blklen) {
        bsav = t;
        jend = bj + blklen - 1 < r - 1 ? bj + blklen - 1 : r - 1;
        neg = rl_neg_run(D, LLD, bj, jend, 1, sigma, &t, 0);
        if (t != t) {
            t = bsav;
            neg = rl_neg_run(D, LLD, bj, jend, 1, sigma, &t, 1);
        }
        negcnt += neg;
    }
    p = D[n] - sigma;
    for (bj = n - 1; bj >= r; bj -= blklen) {
        bsav = p;
        jend = bj - blklen + 1 > r ? bj - blklen + 1 : r;
        neg = rl_neg_run(LLD, D, bj, jend, -1, sigma, &p, 0);
        if (p != p) {
            p = bsav;
            neg = rl_neg_run(LLD, D, bj, jend, -1, sigma, &p, 1);
        }
        negcnt += neg;
    }
    gamma = (t + sigma) + p;
    if (gamma < 0.0) negcnt++;
    return negcnt;
}

/* a bisection's converged intervals (IWORK(2i - 1) = 0) as eigenvalues
 * (their midpoints) and errors, for dlarrb and dlarrj alike */
static void rl_bisected(int first, int last, int offset, double* W, double* WERR, const double* WORK,
                        const int* IWORK) {
    int i, k, ii;
    for (i = first; i <= last; i++) {
        k = 2 * i;
        ii = i - offset;
        if (IWORK[k - 1] == 0) {
            W[ii] = 0.5 * (WORK[k - 1] + WORK[k]);
            WERR[ii] = WORK[k] - W[ii];
        }
    }
}

/* T's eigenvalues below s (dlarrj's Sturm count on D and E2 = e^2) */
static int rl_sturm_count(int n, const double* D, const double* E2, double s) {
    int cnt = 0, j;
    double dplus = D[1] - s;
    if (dplus < 0.0) cnt++;
    for (j = 2; j <= n; j++) {
        dplus = D[j] - s - E2[j - 1] / dplus;
        if (dplus < 0.0) cnt++;
    }
    return cnt;
}

/* dlarrb: bisection refinement of eigenvalues ifirst..ilast of L D L'.
 * W, WGAP, WERR are indexed i - offset; WORK [2n], IWORK [2n]. */
static void rl_dlarrb(int n, const double* D, const double* LLD, int ifirst, int ilast, double rtol1, double rtol2,
                      int offset, double* W, double* WGAP, double* WERR, double* WORK, int* IWORK, double pivmin,
                      double spdiam, int twist) {
    int maxitr, r, i1, nint, prev, i, k, ii, negcnt, iter, olnint, ip, next;
    double mnwdth, rgap, lgap, gap, left, right, back, width, tmp, cvrgd, mid;
    if (n <= 0) return;
    maxitr = (int)((log(spdiam + pivmin) - log(pivmin)) / log(2.0)) + 2;
    mnwdth = 2.0 * pivmin;
    r = twist;
    if (r < 1 || r > n) r = n;
    i1 = ifirst;
    nint = 0;
    prev = 0;
    rgap = WGAP[i1 - offset];
    for (i = i1; i <= ilast; i++) {
        k = 2 * i;
        ii = i - offset;
        left = W[ii] - WERR[ii];
        right = W[ii] + WERR[ii];
        lgap = rgap;
        rgap = WGAP[ii];
        gap = rl_min(lgap, rgap);
        back = WERR[ii];
        for (;;) {
            negcnt = rl_dlaneg(n, D, LLD, left, pivmin, r);
            if (negcnt > i - 1) { left = left - back; back = 2.0 * back; } else break;
        }
        back = WERR[ii];
        for (;;) {
            negcnt = rl_dlaneg(n, D, LLD, right, pivmin, r);
            if (negcnt < i) { right = right + back; back = 2.0 * back; } else break;
        }
        width = 0.5 * fabs(left - right);
        tmp = rl_max(fabs(left), fabs(right));
        cvrgd = rl_max(rtol1 * gap, rtol2 * tmp);
        if (width <= cvrgd || width <= mnwdth) {
            IWORK[k - 1] = -1;
            if (i == i1 && i < ilast) i1 = i + 1;
            if (prev >= i1 && i <= ilast) IWORK[2 * prev - 1] = i + 1;
        } else {
            prev = i;
            nint++;
            IWORK[k - 1] = i + 1;
            IWORK[k] = negcnt;
        }
        WORK[k - 1] = left;
        WORK[k] = right;
    }
    iter = 0;
    do {
        prev = i1 - 1;
        i = i1;
        olnint = nint;
        for (ip = 1; ip <= olnint; ip++) {
            k = 2 * i;
            ii = i - offset;
            rgap = WGAP[ii];
            lgap = rgap;
            if (ii > 1) lgap = WGAP[ii - 1];
            gap = rl_min(lgap, rgap);
            next = IWORK[k - 1];
            left = WORK[k - 1];
            right = WORK[k];
            mid = 0.5 * (left + right);
            width = right - mid;
            tmp = rl_max(fabs(left), fabs(right));
            cvrgd = rl_max(rtol1 * gap, rtol2 * tmp);
            if (width <= cvrgd || width <= mnwdth || iter == maxitr) {
                nint--;
                IWORK[k - 1] = 0;
                if (i1 == i) i1 = next;
                else if (prev >= i1) IWORK[2 * prev - 1] = next;
                i = next;
                continue;
            }
            prev = i;
            negcnt = rl_dlaneg(n, D, LLD, mid, pivmin, r);
            if (negcnt <= i - 1) WORK[k - 1] = mid;
            else WORK[k] = mid;
            i = next;
        }
        iter++;
    } while (nint > 0 && iter <= maxitr);
    rl_bisected(ifirst, ilast, offset, W, WERR, WORK, IWORK);
    for (i = ifirst + 1; i <= ilast; i++) {
        k = 2 * i;
        ii = i - offset;
        WGAP[ii - 1] = rl_max(0.0, W[ii] - WERR[ii] - W[ii - 1] - WERR[ii - 1]);
    }
}

/* dlar1v: the eigenvector of L D L' at lambda by a twisted factorisation,
 * z(r) = 1 at the twist index r (found when *r is 0). WORK [4n]. */
static void rl_dlar1v(int n, int b1, int bn, double lambda, const double* D, const double* L, const double* LD,
                      const double* LLD, double pivmin, double gaptol, double* Z, int wantnc, int* negcnt,
                      double* ztz, double* mingma, int* r, int* ISUPPZ, double* nrminv, double* resid,
                      double* rqcorr, double* WORK) {
    const double eps = RL_EPS;
    int r1, r2, indlpl = 0, indumn = n, inds = 2 * n + 1, indp = 3 * n + 1, i, neg1, neg2, sawnan1, sawnan2;
    double s, dplus, dminus, tmp;
    if (*r == 0) { r1 = b1; r2 = bn; } else { r1 = *r; r2 = *r; }
    if (b1 == 1) WORK[inds] = 0.0;
    else WORK[inds + b1 - 1] = LLD[b1 - 1];
    neg1 = 0;
    s = WORK[inds + b1 - 1] - lambda;
    for (i = b1; i <= r1 - 1; i++) {
        dplus = D[i] + s;
        WORK[indlpl + i] = LD[i] / dplus;
        if (dplus < 0.0) neg1++;
        WORK[inds + i] = s * WORK[indlpl + i] * L[i];
        s = WORK[inds + i] - lambda;
    }
    sawnan1 = s != s;
    if (!sawnan1) {
        for (i = r1; i <= r2 - 1; i++) {
            dplus = D[i] + s;
            WORK[indlpl + i] = LD[i] / dplus;
            WORK[inds + i] = s * WORK[indlpl + i] * L[i];
            s = WORK[inds + i] - lambda;
        }
        sawnan1 = s != s;
    }
    if (sawnan1) {
        neg1 = 0;
        s = WORK[inds + b1 - 1] - lambda;
        for (i = b1; i <= r1 - 1; i++) {
            dplus = D[i] + s;
            if (fabs(dplus) < pivmin) dplus = -pivmin;
            WORK[indlpl + i] = LD[i] / dplus;
            if (dplus < 0.0) neg1++;
            WORK[inds + i] = s * WORK[indlpl + i] * L[i];
            if (WORK[indlpl + i] == 0.0) WORK[inds + i] = LLD[i];
            s = WORK[inds + i] - lambda;
        }
        for (i = r1; i <= r2 - 1; i++) {
            dplus = D[i] + s;
            if (fabs(dplus) < pivmin) dplus = -pivmin;
            WORK[indlpl + i] = LD[i] / dplus;
            WORK[inds + i] = s * WORK[indlpl + i] * L[i];
            if (WORK[indlpl + i] == 0.0) WORK[inds + i] = LLD[i];
            s = WORK[inds + i] - lambda;
        }
    }
    neg2 = 0;
    WORK[indp + bn - 1] = D[bn] - lambda;
    for (i = bn - 1; i >= r1; i--) {
        dminus = LLD[i] + WORK[indp + i];
        tmp = D[i] / dminus;
        if (dminus < 0.0) neg2++;
        WORK[indumn + i] = L[i] * tmp;
        WORK[indp + i - 1] = WORK[indp + i] * tmp - lambda;
    }
    tmp = WORK[indp + r1 - 1];
    sawnan2 = tmp != tmp;
    if (sawnan2) {
        neg2 = 0;
        for (i = bn - 1; i >= r1; i--) {
            dminus = LLD[i] + WORK[indp + i];
            if (fabs(dminus) < pivmin) dminus = -pivmin;
            tmp = D[i] / dminus;
            if (dminus < 0.0) neg2++;
            WORK[indumn + i] = L[i] * tmp;
            WORK[indp + i - 1] = WORK[indp + i] * tmp - lambda;
            if (tmp == 0.0) WORK[indp + i - 1] = D[i] - lambda;
        }
    }
    *mingma = WORK[inds + r1 - 1] + WORK[indp + r1 - 1];
    if (*mingma < 0.0) neg1++;
    *negcnt = wantnc ? neg1 + neg2 : -1;
    if (fabs(*mingma) == 0.0) *mingma = eps * WORK[inds + r1 - 1];
    *r = r1;
    for (i = r1; i <= r2 - 1; i++) {
        tmp = WORK[inds + i] + WORK[indp + i];
        if (tmp == 0.0) tmp = eps * WORK[inds + i];
        if (fabs(tmp) <= fabs(*mingma)) { *mingma = tmp; *r = i + 1; }
    }
    ISUPPZ[1] = b1;
    ISUPPZ[2] = bn;
    Z[*r] = 1.0;
    *ztz = 1.0;
    if (!sawnan1 && !sawnan2) {
        for (i = *r - 1; i >= b1; i--) {
            Z[i] = -(WORK[indlpl + i] * Z[i + 1]);
            if ((fabs(Z[i]) + fabs(Z[i + 1])) * fabs(LD[i]) < gaptol) { Z[i] = 0.0; ISUPPZ[1] = i + 1; break; }
            *ztz = *ztz + Z[i] * Z[i];
        }
    } else {
        for (i = *r - 1; i >= b1; i--) {
            if (Z[i + 1] == 0.0) Z[i] = -(LD[i + 1] / LD[i]) * Z[i + 2];
            else Z[i] = -(WORK[indlpl + i] * Z[i + 1]);
            if ((fabs(Z[i]) + fabs(Z[i + 1])) * fabs(LD[i]) < gaptol) { Z[i] = 0.0; ISUPPZ[1] = i + 1; break; }
            *ztz = *ztz + Z[i] * Z[i];
        }
    }
    if (!sawnan1 && !sawnan2) {
        for (i = *r; i <= bn - 1; i++) {
            Z[i + 1] = -(WORK[indumn + i] * Z[i]);
            if ((fabs(Z[i]) + fabs(Z[i + 1])) * fabs(LD[i]) < gaptol) { Z[i + 1] = 0.0; ISUPPZ[2] = i; break; }
            *ztz = *ztz + Z[i + 1] * Z[i + 1];
        }
    } else {
        for (i = *r; i <= bn - 1; i++) {
            if (Z[i] == 0.0) Z[i + 1] = -(LD[i - 1] / LD[i]) * Z[i - 1];
            else Z[i + 1] = -(WORK[indumn + i] * Z[i]);
            if ((fabs(Z[i]) + fabs(Z[i + 1])) * fabs(LD[i]) < gaptol) { Z[i + 1] = 0.0; ISUPPZ[2] = i; break; }
            *ztz = *ztz + Z[i + 1] * Z[i + 1];
        }
    }
    tmp = 1.0 / *ztz;
    *nrminv = sqrt(tmp);
    *resid = fabs(*mingma) * *nrminv;
    *rqcorr = *mingma * tmp;
}

/* dlarrf: a new representation L+ D+ L+' = L D L' - sigma I for the cluster
 * clstrt..clend (W, WGAP, WERR 1-based over the block's eigenvalues).
 * Returns 0, or 1 where none was found. WORK [2n]. */
static int rl_dlarrf(int n, const double* D, const double* L, const double* LD, int clstrt, int clend,
                     const double* W, const double* WGAP, const double* WERR, double spdiam, double clgapl,
                     double clgapr, double pivmin, double* sigma, double* DPLUS, double* LPLUS, double* WORK) {
    const double maxgrowth1 = 8.0, maxgrowth2 = 8.0, quart = 0.25;
    const int ktrymax = 1, sleft = 1, sright = 2;
    const double eps = RL_EPS;
    int i, indx = 0, ktry, shift = 0, forcer = 0, nofail = 0, sawnan1, sawnan2, dorrr1;
    double fact = (double)(1 << ktrymax), clwdth, avgap, mingap, lsigma, rsigma, ldmax, rdmax, ldelta, rdelta, s,
           smlgrowth, fail, fail2, bestshift, growthbound, max1 = 0.0, max2 = 0.0, tmp, znm2, prod, oldp, rrr1,
           rrr2;
    if (n <= 0) return 0;
    clwdth = fabs(W[clend] - W[clstrt]) + WERR[clend] + WERR[clstrt];
    avgap = clwdth / (double)(clend - clstrt);
    mingap = rl_min(clgapl, clgapr);
    lsigma = rl_min(W[clstrt], W[clend]) - WERR[clstrt];
    rsigma = rl_max(W[clstrt], W[clend]) + WERR[clend];
    lsigma = lsigma - fabs(lsigma) * 4.0 * eps;
    rsigma = rsigma + fabs(rsigma) * 4.0 * eps;
    ldmax = quart * mingap + 2.0 * pivmin;
    rdmax = quart * mingap + 2.0 * pivmin;
    ldelta = rl_max(avgap, WGAP[clstrt]) / fact;
    rdelta = rl_max(avgap, WGAP[clend - 1]) / fact;
    s = RL_SAFMIN;
    smlgrowth = 1.0 / s;
    fail = (double)(n - 1) * mingap / (spdiam * eps);
    fail2 = (double)(n - 1) * mingap / (spdiam * sqrt(eps));
    bestshift = lsigma;
    ktry = 0;
    growthbound = maxgrowth1 * spdiam;
    for (;;) {
        sawnan1 = 0;
        sawnan2 = 0;
        ldelta = rl_min(ldmax, ldelta);
        rdelta = rl_min(rdmax, rdelta);
        s = -lsigma;
        DPLUS[1] = D[1] + s;
        if (fabs(DPLUS[1]) < pivmin) { DPLUS[1] = -pivmin; sawnan1 = 1; }
        max1 = fabs(DPLUS[1]);
        for (i = 1; i <= n - 1; i++) {
            LPLUS[i] = LD[i] / DPLUS[i];
            s = s * LPLUS[i] * L[i] - lsigma;
            DPLUS[i + 1] = D[i + 1] + s;
            if (fabs(DPLUS[i + 1]) < pivmin) { DPLUS[i + 1] = -pivmin; sawnan1 = 1; }
            max1 = rl_max(max1, fabs(DPLUS[i + 1]));
        }
        sawnan1 = sawnan1 || (max1 != max1);
        if (forcer || (max1 <= growthbound && !sawnan1)) { *sigma = lsigma; shift = sleft; break; }
        s = -rsigma;
        WORK[1] = D[1] + s;
        if (fabs(WORK[1]) < pivmin) { WORK[1] = -pivmin; sawnan2 = 1; }
        max2 = fabs(WORK[1]);
        for (i = 1; i <= n - 1; i++) {
            WORK[n + i] = LD[i] / WORK[i];
            s = s * WORK[n + i] * L[i] - rsigma;
            WORK[i + 1] = D[i + 1] + s;
            if (fabs(WORK[i + 1]) < pivmin) { WORK[i + 1] = -pivmin; sawnan2 = 1; }
            max2 = rl_max(max2, fabs(WORK[i + 1]));
        }
        sawnan2 = sawnan2 || (max2 != max2);
        if (forcer || (max2 <= growthbound && !sawnan2)) { *sigma = rsigma; shift = sright; break; }
        if (!(sawnan1 && sawnan2)) {
            if (!sawnan1) {
                indx = 1;
                if (max1 <= smlgrowth) { smlgrowth = max1; bestshift = lsigma; }
            }
            if (!sawnan2) {
                if (sawnan1 || max2 <= max1) indx = 2;
                if (max2 <= smlgrowth) { smlgrowth = max2; bestshift = rsigma; }
            }
            dorrr1 = (clwdth < mingap / 128.0) && (rl_min(max1, max2) < fail2) && !sawnan1 && !sawnan2;
            if (dorrr1) {
                if (indx == 1) {
                    tmp = fabs(DPLUS[n]);
                    znm2 = 1.0;
                    prod = 1.0;
                    oldp = 1.0;
                    for (i = n - 1; i >= 1; i--) {
                        if (prod <= eps) prod = ((DPLUS[i + 1] * WORK[n + i + 1]) / (DPLUS[i] * WORK[n + i])) * oldp;
                        else prod = prod * fabs(WORK[n + i]);
                        oldp = prod;
                        znm2 = znm2 + prod * prod;
                        tmp = rl_max(tmp, fabs(DPLUS[i] * prod));
                    }
                    rrr1 = tmp / (spdiam * sqrt(znm2));
                    if (rrr1 <= maxgrowth2) { *sigma = lsigma; shift = sleft; break; }
                } else if (indx == 2) {
                    tmp = fabs(WORK[n]);
                    znm2 = 1.0;
                    prod = 1.0;
                    oldp = 1.0;
                    for (i = n - 1; i >= 1; i--) {
                        if (prod <= eps) prod = ((WORK[i + 1] * LPLUS[i + 1]) / (WORK[i] * LPLUS[i])) * oldp;
                        else prod = prod * fabs(LPLUS[i]);
                        oldp = prod;
                        znm2 = znm2 + prod * prod;
                        tmp = rl_max(tmp, fabs(WORK[i] * prod));
                    }
                    rrr2 = tmp / (spdiam * sqrt(znm2));
                    if (rrr2 <= maxgrowth2) { *sigma = rsigma; shift = sright; break; }
                }
            }
        }
        if (ktry < ktrymax) {
            lsigma = rl_max(lsigma - ldelta, lsigma - ldmax);
            rsigma = rl_min(rsigma + rdelta, rsigma + rdmax);
            ldelta = 2.0 * ldelta;
            rdelta = 2.0 * rdelta;
            ktry++;
        } else if (smlgrowth < fail || nofail) {
            lsigma = bestshift;
            rsigma = bestshift;
            forcer = 1;
        } else {
            return 1;
        }
    }
    if (shift == sright) {
        for (i = 1; i <= n; i++) DPLUS[i] = WORK[i];
        for (i = 1; i <= n - 1; i++) LPLUS[i] = WORK[n + i];
    }
    return 0;
}


/* (a b) mod 2^48 for a, b < 2^48, in 64-bit integers: b in 24-bit halves */
static unsigned long long rl_mulmod48(unsigned long long a, unsigned long long b) {
    const unsigned long long m24 = (1ULL << 24) - 1, m48 = (1ULL << 48) - 1;
    unsigned long long a0 = a & m24, a1 = a >> 24, b0 = b & m24, b1 = b >> 24;
    return (a0 * b0 + (((a1 * b0 + a0 * b1) & m24) << 24)) & m48;
}

/* dlaruv / dlarnv(2, ...): LAPACK's uniform(-1, 1) numbers from the seed
 * (1, 1, 1, 1): x_k = seed * a^k mod 2^48, a = 33952834046453, read as four
 * 12-bit digits (the table of powers LAPACK keeps, computed here) */
static void rl_dlarnv_uniform11(int n, double* x) {
    const unsigned long long a = 33952834046453ULL;
    const double r = 1.0 / 4096.0;
    unsigned long long seed = (1ULL << 36) + (1ULL << 24) + (1ULL << 12) + 1ULL, power, v = seed;
    int done = 0, chunk, i;
    while (done < n) {
        chunk = n - done < 64 ? n - done : 64;
        power = 1;
        for (i = 0; i < chunk; i++) {
            int it1, it2, it3, it4;
            double u;
            power = rl_mulmod48(power, a);
            v = rl_mulmod48(seed, power);
            it1 = (int)(v >> 36) & 4095;
            it2 = (int)(v >> 24) & 4095;
            it3 = (int)(v >> 12) & 4095;
            it4 = (int)v & 4095;
            u = r * ((double)it1 + r * ((double)it2 + r * ((double)it3 + r * (double)it4)));
            /* u rounds to 1 once in 2^53 draws; LAPACK then perturbs its seed
             * digits and draws again, which this port does not follow */
            x[done + i] = 2.0 * u - 1.0;
        }
        seed = v;
        done += chunk;
    }
}

/* dlarrk: the iw-th eigenvalue of T by bisection (E2 = e^2), to reltol */
static void rl_dlarrk(int n, int iw, double gl, double gu, const double* D, const double* E2, double pivmin,
                      double reltol, double* w, double* werr) {
    const double eps = RL_EPS, fudge = 2.0;
    double tnorm = rl_max(fabs(gl), fabs(gu)), rtoli = reltol, atoli = fudge * 2.0 * pivmin, left, right, mid, tmp1,
           tmp2;
    int itmax = (int)((log(tnorm + pivmin) - log(pivmin)) / log(2.0)) + 2, it = 0, negcnt, i;
    left = gl - fudge * tnorm * eps * n - fudge * 2.0 * pivmin;
    right = gu + fudge * tnorm * eps * n + fudge * 2.0 * pivmin;
    for (;;) {
        tmp1 = fabs(right - left);
        tmp2 = rl_max(fabs(right), fabs(left));
        if (tmp1 < rl_max(rl_max(atoli, pivmin), rtoli * tmp2)) break;
        if (it > itmax) break;
        it++;
        mid = 0.5 * (left + right);
        negcnt = 0;
        tmp1 = D[1] - mid;
        if (fabs(tmp1) < pivmin) tmp1 = -pivmin;
        if (tmp1 <= 0.0) negcnt++;
        for (i = 2; i <= n; i++) {
            tmp1 = D[i] - E2[i - 1] / tmp1 - mid;
            if (fabs(tmp1) < pivmin) tmp1 = -pivmin;
            if (tmp1 <= 0.0) negcnt++;
        }
        if (negcnt >= iw) right = mid;
        else left = mid;
    }
    *w = 0.5 * (left + right);
    *werr = 0.5 * fabs(right - left);
}

/* the root representations and eigenvalues (dlarre, range 'A', dqds).
 * D, E, E2 1-based [n]; on return D and E hold each block's D and L, E(end)
 * its shift. Returns 0, or LAPACK's nonzero info. */
typedef struct {
    int nsplit, m;
    double pivmin, vl, vu;
    int *isplit, *iblock, *indexw;
    double *W, *WERR, *WGAP, *GERS;
} rl_spectrum;

static int rl_dlarre(int n, double* D, double* E, double* E2, double spltol, rl_spectrum* sp, double* WORK) {
    const double eps = RL_EPS, safmin = RL_SAFMIN, hndrd = 100.0, pert = 8.0, fourth = 0.25, maxgrowth = 64.0,
                 fudge = 2.0;
    const int maxtry = 6;
    double rtl = sqrt(eps), gl, gu, eold, emax, eabs, tmp, tmp1, spdiam, isleft, isrght, s1, s2, sigma, sgndef, tau,
           dpivot, dmax, rtol;
    int i, j, jblk, ibegin, iend, in, wbegin, wend, mb, indl, indu, cnt1, cnt2, idum, norep, m = 0;
    double *W = sp->W, *WERR = sp->WERR, *WGAP = sp->WGAP, *GERS = sp->GERS;
    int *ISPLIT = sp->isplit, *IBLOCK = sp->iblock, *INDEXW = sp->indexw;
    if (n == 1) {
        sp->m = 1;
        W[1] = D[1];
        WERR[1] = 0.0;
        WGAP[1] = 0.0;
        IBLOCK[1] = 1;
        INDEXW[1] = 1;
        GERS[1] = D[1];
        GERS[2] = D[1];
        E[1] = 0.0;
        sp->nsplit = 1;
        ISPLIT[1] = 1;
        sp->pivmin = safmin;
        return 0;
    }
    gl = D[1];
    gu = D[1];
    eold = 0.0;
    emax = 0.0;
    E[n] = 0.0;
    for (i = 1; i <= n; i++) {
        WERR[i] = 0.0;
        WGAP[i] = 0.0;
        eabs = fabs(E[i]);
        if (eabs >= emax) emax = eabs;
        tmp1 = eabs + eold;
        GERS[2 * i - 1] = D[i] - tmp1;
        gl = rl_min(gl, GERS[2 * i - 1]);
        GERS[2 * i] = D[i] + tmp1;
        gu = rl_max(gu, GERS[2 * i]);
        eold = eabs;
    }
    sp->pivmin = safmin * rl_max(1.0, emax * emax);
    spdiam = gu - gl;
    /* dlarra: split where an off-diagonal is negligible */
    sp->nsplit = 1;
    if (spltol < 0.0) {
        tmp1 = fabs(spltol) * spdiam;
        for (i = 1; i <= n - 1; i++) {
            eabs = fabs(E[i]);
            if (eabs <= tmp1) { E[i] = 0.0; E2[i] = 0.0; ISPLIT[sp->nsplit] = i; sp->nsplit++; }
        }
    } else {
        for (i = 1; i <= n - 1; i++) {
            eabs = fabs(E[i]);
            if (eabs <= spltol * sqrt(fabs(D[i])) * sqrt(fabs(D[i + 1]))) {
                E[i] = 0.0; E2[i] = 0.0; ISPLIT[sp->nsplit] = i; sp->nsplit++;
            }
        }
    }
    ISPLIT[sp->nsplit] = n;
    sp->vl = gl;
    sp->vu = gu;
    ibegin = 1;
    wbegin = 1;
    for (jblk = 1; jblk <= sp->nsplit; jblk++) {
        iend = ISPLIT[jblk];
        in = iend - ibegin + 1;
        if (in == 1) {
            m++;
            W[m] = D[ibegin];
            WERR[m] = 0.0;
            WGAP[m] = 0.0;
            IBLOCK[m] = jblk;
            INDEXW[m] = 1;
            wbegin++;
            E[iend] = 0.0;
            ibegin = iend + 1;
            continue;
        }
        E[iend] = 0.0;
        gl = D[ibegin];
        gu = D[ibegin];
        for (i = ibegin; i <= iend; i++) {
            gl = rl_min(GERS[2 * i - 1], gl);
            gu = rl_max(GERS[2 * i], gu);
        }
        spdiam = gu - gl;
        rl_dlarrk(in, 1, gl, gu, &D[ibegin - 1], &E2[ibegin - 1], sp->pivmin, rtl, &tmp, &tmp1);
        isleft = rl_max(gl, tmp - tmp1 - hndrd * eps * fabs(tmp - tmp1));
        rl_dlarrk(in, in, gl, gu, &D[ibegin - 1], &E2[ibegin - 1], sp->pivmin, rtl, &tmp, &tmp1);
        isrght = rl_min(gu, tmp + tmp1 + hndrd * eps * fabs(tmp + tmp1));
        spdiam = isrght - isleft;
        indl = 1;
        indu = in;
        mb = in;
        wend = wbegin + mb - 1;
        s1 = isleft + fourth * spdiam;
        s2 = isrght - fourth * spdiam;
        /* dlarrc on T: Sturm counts at s1 and s2 */
        {
            double lpivot = D[ibegin] - s1, rpivot = D[ibegin] - s2;
            int lcnt = 0, rcnt = 0;
            if (lpivot <= 0.0) lcnt++;
            if (rpivot <= 0.0) rcnt++;
            for (i = 1; i <= in - 1; i++) {
                tmp = E[ibegin + i - 1] * E[ibegin + i - 1];
                lpivot = (D[ibegin + i] - s1) - tmp / lpivot;
                rpivot = (D[ibegin + i] - s2) - tmp / rpivot;
                if (lpivot <= 0.0) lcnt++;
                if (rpivot <= 0.0) rcnt++;
            }
            cnt1 = lcnt;
            cnt2 = rcnt;
        }
        if (cnt1 - indl >= indu - cnt2) {
            sigma = rl_max(isleft, gl);
            sgndef = 1.0;
        } else {
            sigma = rl_min(isrght, gu);
            sgndef = -1.0;
        }
        tau = spdiam * eps * n + 2.0 * sp->pivmin;
        tau = rl_max(tau, 2.0 * eps * fabs(sigma));
        for (idum = 1; idum <= maxtry; idum++) {
            dpivot = D[ibegin] - sigma;
            WORK[1] = dpivot;
            dmax = fabs(WORK[1]);
            j = ibegin;
            for (i = 1; i <= in - 1; i++) {
                WORK[2 * in + i] = 1.0 / WORK[i];
                tmp = E[j] * WORK[2 * in + i];
                WORK[in + i] = tmp;
                dpivot = (D[j + 1] - sigma) - tmp * E[j];
                WORK[i + 1] = dpivot;
                dmax = rl_max(dmax, fabs(dpivot));
                j++;
            }
            norep = dmax > maxgrowth * spdiam;
            if (!norep) {
                for (i = 1; i <= in; i++) if (sgndef * WORK[i] < 0.0) norep = 1;
            }
            if (!norep) break;
            if (idum == maxtry - 1) {
                if (sgndef == 1.0) sigma = gl - fudge * spdiam * eps * n - fudge * 2.0 * sp->pivmin;
                else sigma = gu + fudge * spdiam * eps * n + fudge * 2.0 * sp->pivmin;
            } else {
                sigma = sigma - sgndef * tau;
                tau = 2.0 * tau;
            }
            if (idum == maxtry) return 2;
        }
        E[iend] = sigma;
        for (i = 1; i <= in; i++) D[ibegin + i - 1] = WORK[i];
        for (i = 1; i <= in - 1; i++) E[ibegin + i - 1] = WORK[in + i];
        /* a small random relative perturbation of the representation */
        rl_dlarnv_uniform11(2 * in - 1, &WORK[1]);
        for (i = 1; i <= in - 1; i++) {
            D[ibegin + i - 1] = D[ibegin + i - 1] * (1.0 + eps * pert * WORK[i]);
            E[ibegin + i - 1] = E[ibegin + i - 1] * (1.0 + eps * pert * WORK[in + i]);
        }
        D[iend] = D[iend] * (1.0 + eps * 4.0 * WORK[in]);
        /* dqds on the representation's qd array */
        rtol = log((double)in) * 4.0 * eps;
        j = ibegin;
        for (i = 1; i <= in - 1; i++) {
            WORK[2 * i - 1] = fabs(D[j]);
            WORK[2 * i] = E[j] * E[j] * WORK[2 * i - 1];
            j++;
        }
        WORK[2 * in - 1] = fabs(D[iend]);
        WORK[2 * in] = 0.0;
        if (rl_dlasq2(in, &WORK[1]) != 0) return -5;
        for (i = 1; i <= in; i++) if (WORK[i] < 0.0) return -6;
        if (sgndef > 0.0) {
            for (i = indl; i <= indu; i++) { m++; W[m] = WORK[in - i + 1]; IBLOCK[m] = jblk; INDEXW[m] = i; }
        } else {
            for (i = indl; i <= indu; i++) { m++; W[m] = -WORK[i]; IBLOCK[m] = jblk; INDEXW[m] = i; }
        }
        for (i = m - mb + 1; i <= m; i++) WERR[i] = rtol * fabs(W[i]);
        for (i = m - mb + 1; i <= m - 1; i++) WGAP[i] = rl_max(0.0, W[i + 1] - WERR[i + 1] - (W[i] + WERR[i]));
        WGAP[m] = rl_max(0.0, (sp->vu - sigma) - (W[m] + WERR[m]));
        ibegin = iend + 1;
        wbegin = wend + 1;
    }
    sp->m = m;
    return 0;
}


/* dlarrv: every eigenvector of T from the root representations (D, L 1-based,
 * L(end of block) = the block's shift). Z [ldz, m] column-major gets the
 * vectors (Z(i, j) = z[(j - 1) * ldz + i - 1]). WORK [12n + 1], IWORK [7n + 1].
 * Returns 0, or LAPACK's nonzero info. */
static int rl_dlarrv(int n, double vl, double* D, double* L, double pivmin, const int* ISPLIT, int m, double minrgp,
                     double rtol1, double rtol2, double* W, double* WERR, double* WGAP, const int* IBLOCK,
                     const int* INDEXW, const double* GERS, double* z, int ldz, int* ISUPPZ, double* WORK,
                     int* IWORK) {
    const int maxitr = 10;
    const double eps = RL_EPS, rqtol = 2.0 * RL_EPS;
#define ZZ(i, j) z[(size_t)((j) - 1) * (size_t)ldz + (size_t)((i) - 1)]
    int indld = n + 1, indlld = 2 * n + 1, indwrk = 3 * n + 1, iindr = 0, iindc1 = n, iindc2 = 2 * n,
        iindwk = 3 * n + 1;
    int i, j, k, ii, jblk, ibegin, iend, wbegin, wend, oldien, in, im, ndepth, parity, nclus, idone, oldncl,
        oldcls, newcls, oldfst, oldlst, p, q, offset, newfst, newlst, newsiz, newftt, iter, windex, windmn, windpl,
        indeig, isupmn, isupmx, usedbs, usedrq, needbs, itmp1, negcnt, stp2ii, zfrom, zto, done = 0;
    double sigma, gl, gu, spdiam, tmp, lgap, rgap, tau, ssigma, fudge, tol, lambda, left, right, gap, gaptol,
           savgap, ztz, mingma, nrminv, resid, rqcorr, bstres = 0.0, bstw = 0.0, sgndef;
    for (i = 1; i <= 12 * n; i++) WORK[i] = 0.0;
    for (i = 1; i <= 7 * n; i++) IWORK[i] = 0;
    for (j = 1; j <= m; j++) for (i = 1; i <= n; i++) ZZ(i, j) = 0.0;
    ibegin = 1;
    wbegin = 1;
    for (jblk = 1; jblk <= IBLOCK[m]; jblk++) {
        iend = ISPLIT[jblk];
        sigma = L[iend];
        wend = wbegin - 1;
        while (wend < m && IBLOCK[wend + 1] == jblk) wend++;
        if (wend < wbegin) { ibegin = iend + 1; continue; }
        gl = GERS[2 * ibegin - 1];
        gu = GERS[2 * ibegin];
        for (i = ibegin + 1; i <= iend; i++) {
            gl = rl_min(GERS[2 * i - 1], gl);
            gu = rl_max(GERS[2 * i], gu);
        }
        spdiam = gu - gl;
        oldien = ibegin - 1;
        in = iend - ibegin + 1;
        im = wend - wbegin + 1;
        if (ibegin == iend) {
            done++;
            ZZ(ibegin, wbegin) = 1.0;
            ISUPPZ[2 * wbegin - 1] = ibegin;
            ISUPPZ[2 * wbegin] = ibegin;
            W[wbegin] = W[wbegin] + sigma;
            WORK[wbegin] = W[wbegin];
            ibegin = iend + 1;
            wbegin++;
            continue;
        }
        for (i = 0; i < im; i++) WORK[wbegin + i] = W[wbegin + i];
        for (i = 1; i <= im; i++) W[wbegin + i - 1] = W[wbegin + i - 1] + sigma;
        ndepth = 0;
        parity = 1;
        nclus = 1;
        IWORK[iindc1 + 1] = 1;
        IWORK[iindc1 + 2] = im;
        idone = 0;
        while (idone < im) {
            if (ndepth > m) return -2;
            oldncl = nclus;
            nclus = 0;
            parity = 1 - parity;
            if (parity == 0) { oldcls = iindc1; newcls = iindc2; } else { oldcls = iindc2; newcls = iindc1; }
            for (i = 1; i <= oldncl; i++) {
                j = oldcls + 2 * i;
                oldfst = IWORK[j - 1];
                oldlst = IWORK[j];
                if (ndepth > 0) {
                    j = wbegin + oldfst - 1;
                    for (k = 0; k < in; k++) D[ibegin + k] = ZZ(ibegin + k, j);
                    for (k = 0; k < in - 1; k++) L[ibegin + k] = ZZ(ibegin + k, j + 1);
                    sigma = ZZ(iend, j + 1);
                    for (k = 0; k < in; k++) { ZZ(ibegin + k, j) = 0.0; ZZ(ibegin + k, j + 1) = 0.0; }
                }
                for (j = ibegin; j <= iend - 1; j++) {
                    tmp = D[j] * L[j];
                    WORK[indld - 1 + j] = tmp;
                    WORK[indlld - 1 + j] = tmp * L[j];
                }
                if (ndepth > 0) {
                    p = INDEXW[wbegin - 1 + oldfst];
                    q = INDEXW[wbegin - 1 + oldlst];
                    offset = INDEXW[wbegin] - 1;
                    rl_dlarrb(in, &D[ibegin - 1], &WORK[indlld + ibegin - 2], p, q, rtol1, rtol2, offset,
                              &WORK[wbegin - 1], &WGAP[wbegin - 1], &WERR[wbegin - 1], &WORK[indwrk - 1],
                              &IWORK[iindwk - 1], pivmin, spdiam, in);
                    if (oldfst > 1)
                        WGAP[wbegin + oldfst - 2] =
                            rl_max(WGAP[wbegin + oldfst - 2], W[wbegin + oldfst - 1] - WERR[wbegin + oldfst - 1] -
                                                                  W[wbegin + oldfst - 2] - WERR[wbegin + oldfst - 2]);
                    if (wbegin + oldlst - 1 < wend)
                        WGAP[wbegin + oldlst - 1] =
                            rl_max(WGAP[wbegin + oldlst - 1], W[wbegin + oldlst] - WERR[wbegin + oldlst] -
                                                                  W[wbegin + oldlst - 1] - WERR[wbegin + oldlst - 1]);
                    for (j = oldfst; j <= oldlst; j++) W[wbegin + j - 1] = WORK[wbegin + j - 1] + sigma;
                }
                newfst = oldfst;
                for (j = oldfst; j <= oldlst; j++) {
                    if (j == oldlst) newlst = j;
                    else if (WGAP[wbegin + j - 1] >= minrgp * fabs(WORK[wbegin + j - 1])) newlst = j;
                    else continue;
                    newsiz = newlst - newfst + 1;
                    newftt = wbegin + newfst - 1;
                    if (newsiz > 1) {
                        if (newfst == 1) lgap = rl_max(0.0, W[wbegin] - WERR[wbegin] - vl);
                        else lgap = WGAP[wbegin + newfst - 2];
                        rgap = WGAP[wbegin + newlst - 1];
                        for (k = 1; k <= 2; k++) {
                            p = k == 1 ? INDEXW[wbegin - 1 + newfst] : INDEXW[wbegin - 1 + newlst];
                            offset = INDEXW[wbegin] - 1;
                            rl_dlarrb(in, &D[ibegin - 1], &WORK[indlld + ibegin - 2], p, p, rqtol, rqtol, offset,
                                      &WORK[wbegin - 1], &WGAP[wbegin - 1], &WERR[wbegin - 1], &WORK[indwrk - 1],
                                      &IWORK[iindwk - 1], pivmin, spdiam, in);
                        }
                        if (rl_dlarrf(in, &D[ibegin - 1], &L[ibegin - 1], &WORK[indld + ibegin - 2], newfst, newlst,
                                      &WORK[wbegin - 1], &WGAP[wbegin - 1], &WERR[wbegin - 1], spdiam, lgap, rgap,
                                      pivmin, &tau, &ZZ(ibegin, newftt) - 1, &ZZ(ibegin, newftt + 1) - 1,
                                      &WORK[indwrk - 1]) != 0)
                            return -2;
                        ssigma = sigma + tau;
                        ZZ(iend, newftt + 1) = ssigma;
                        for (k = newfst; k <= newlst; k++) {
                            fudge = 3.0 * eps * fabs(WORK[wbegin + k - 1]);
                            WORK[wbegin + k - 1] = WORK[wbegin + k - 1] - tau;
                            fudge = fudge + 4.0 * eps * fabs(WORK[wbegin + k - 1]);
                            WERR[wbegin + k - 1] = WERR[wbegin + k - 1] + fudge;
                        }
                        nclus++;
                        k = newcls + 2 * nclus;
                        IWORK[k - 1] = newfst;
                        IWORK[k] = newlst;
                    } else {
                        iter = 0;
                        tol = 4.0 * log((double)in) * eps;
                        k = newfst;
                        windex = wbegin + k - 1;
                        windmn = windex - 1 > 1 ? windex - 1 : 1;
                        windpl = windex + 1 < m ? windex + 1 : m;
                        lambda = WORK[windex];
                        done++;
                        left = WORK[windex] - WERR[windex];
                        right = WORK[windex] + WERR[windex];
                        indeig = INDEXW[windex];
                        lgap = k == 1 ? eps * rl_max(fabs(left), fabs(right)) : WGAP[windmn];
                        rgap = k == im ? eps * rl_max(fabs(left), fabs(right)) : WGAP[windex];
                        gap = rl_min(lgap, rgap);
                        gaptol = (k == 1 || k == im) ? 0.0 : gap * eps;
                        isupmn = in;
                        isupmx = 1;
                        savgap = WGAP[windex];
                        WGAP[windex] = gap;
                        usedbs = 0;
                        usedrq = 0;
                        needbs = 0;
                        for (;;) {
                            if (needbs) {
                                usedbs = 1;
                                itmp1 = IWORK[iindr + windex];
                                offset = INDEXW[wbegin] - 1;
                                rl_dlarrb(in, &D[ibegin - 1], &WORK[indlld + ibegin - 2], indeig, indeig, 0.0,
                                          2.0 * eps, offset, &WORK[wbegin - 1], &WGAP[wbegin - 1],
                                          &WERR[wbegin - 1], &WORK[indwrk - 1], &IWORK[iindwk - 1], pivmin, spdiam,
                                          itmp1);
                                lambda = WORK[windex];
                                IWORK[iindr + windex] = 0;
                            }
                            rl_dlar1v(in, 1, in, lambda, &D[ibegin - 1], &L[ibegin - 1], &WORK[indld + ibegin - 2],
                                      &WORK[indlld + ibegin - 2], pivmin, gaptol, &ZZ(ibegin, windex) - 1, !usedbs,
                                      &negcnt, &ztz, &mingma, &IWORK[iindr + windex], &ISUPPZ[2 * windex - 2],
                                      &nrminv, &resid, &rqcorr, &WORK[indwrk - 1]);
                            if (iter == 0 || resid < bstres) { bstres = resid; bstw = lambda; }
                            isupmn = isupmn < ISUPPZ[2 * windex - 1] ? isupmn : ISUPPZ[2 * windex - 1];
                            isupmx = isupmx > ISUPPZ[2 * windex] ? isupmx : ISUPPZ[2 * windex];
                            iter++;
                            if (resid > tol * gap && fabs(rqcorr) > rqtol * fabs(lambda) && !usedbs) {
                                sgndef = indeig <= negcnt ? -1.0 : 1.0;
                                if (rqcorr * sgndef >= 0.0 && lambda + rqcorr <= right && lambda + rqcorr >= left) {
                                    usedrq = 1;
                                    if (sgndef == 1.0) left = lambda;
                                    else right = lambda;
                                    WORK[windex] = 0.5 * (right + left);
                                    lambda = lambda + rqcorr;
                                    WERR[windex] = 0.5 * (right - left);
                                } else {
                                    needbs = 1;
                                }
                                if (right - left < rqtol * fabs(lambda)) { usedbs = 1; continue; }
                                if (iter < maxitr) continue;
                                if (iter == maxitr) { needbs = 1; continue; }
                                return 5;
                            }
                            stp2ii = 0;
                            if (usedrq && usedbs && bstres <= resid) { lambda = bstw; stp2ii = 1; }
                            if (stp2ii)
                                rl_dlar1v(in, 1, in, lambda, &D[ibegin - 1], &L[ibegin - 1],
                                          &WORK[indld + ibegin - 2], &WORK[indlld + ibegin - 2], pivmin, gaptol,
                                          &ZZ(ibegin, windex) - 1, !usedbs, &negcnt, &ztz, &mingma,
                                          &IWORK[iindr + windex], &ISUPPZ[2 * windex - 2], &nrminv, &resid,
                                          &rqcorr, &WORK[indwrk - 1]);
                            WORK[windex] = lambda;
                            break;
                        }
                        ISUPPZ[2 * windex - 1] += oldien;
                        ISUPPZ[2 * windex] += oldien;
                        zfrom = ISUPPZ[2 * windex - 1];
                        zto = ISUPPZ[2 * windex];
                        isupmn += oldien;
                        isupmx += oldien;
                        for (ii = isupmn; ii <= zfrom - 1; ii++) ZZ(ii, windex) = 0.0;
                        for (ii = zto + 1; ii <= isupmx; ii++) ZZ(ii, windex) = 0.0;
                        for (ii = zfrom; ii <= zto; ii++) ZZ(ii, windex) = nrminv * ZZ(ii, windex);
                        W[windex] = lambda + sigma;
                        if (k > 1)
                            WGAP[windmn] = rl_max(WGAP[windmn], W[windex] - WERR[windex] - W[windmn] - WERR[windmn]);
                        if (windex < wend)
                            WGAP[windex] = rl_max(savgap, W[windpl] - WERR[windpl] - W[windex] - WERR[windex]);
                        idone++;
                    }
                    newfst = j + 1;
                }
            }
            ndepth++;
        }
        ibegin = iend + 1;
        wbegin = wend + 1;
    }
    (void)done;
    return 0;
#undef ZZ
}

/* dlaev2: the eigensystem of [[a, b], [b, c]]: rt1 >= rt2 in absolute value
 * order as LAPACK defines it, (cs1, sn1) the unit vector of rt1 */
static void rl_dlaev2(double a, double b, double c, double* rt1, double* rt2, double* cs1, double* sn1) {
    double sm = a + c, df = a - c, adf = fabs(df), tb = b + b, ab = fabs(tb), acmx, acmn, rt, cs, ct, tn, acs;
    int sgn1, sgn2;
    if (fabs(a) > fabs(c)) { acmx = a; acmn = c; } else { acmx = c; acmn = a; }
    if (adf > ab) rt = adf * sqrt(1.0 + (ab / adf) * (ab / adf));
    else if (adf < ab) rt = ab * sqrt(1.0 + (adf / ab) * (adf / ab));
    else rt = ab * sqrt(2.0);
    if (sm < 0.0) {
        *rt1 = 0.5 * (sm - rt);
        sgn1 = -1;
        *rt2 = (acmx / *rt1) * acmn - (b / *rt1) * b;
    } else if (sm > 0.0) {
        *rt1 = 0.5 * (sm + rt);
        sgn1 = 1;
        *rt2 = (acmx / *rt1) * acmn - (b / *rt1) * b;
    } else {
        *rt1 = 0.5 * rt;
        *rt2 = -0.5 * rt;
        sgn1 = 1;
    }
    if (df >= 0.0) { cs = df + rt; sgn2 = 1; } else { cs = df - rt; sgn2 = -1; }
    acs = fabs(cs);
    if (acs > ab) {
        ct = -tb / cs;
        *sn1 = 1.0 / sqrt(1.0 + ct * ct);
        *cs1 = ct * *sn1;
    } else if (ab == 0.0) {
        *cs1 = 1.0;
        *sn1 = 0.0;
    } else {
        tn = -cs / tb;
        *cs1 = 1.0 / sqrt(1.0 + tn * tn);
        *sn1 = tn * *cs1;
    }
    if (sgn1 == sgn2) {
        tn = *cs1;
        *cs1 = -*sn1;
        *sn1 = tn;
    }
}

/* dlarrj: bisection refinement of eigenvalues ifirst..ilast of T itself
 * (D, E2 = e^2, 1-based), for relative accuracy. W, WERR indexed i - offset;
 * WORK [2n], IWORK [2n]. */
static void rl_dlarrj(int n, const double* D, const double* E2, int ifirst, int ilast, double rtol, int offset,
                      double* W, double* WERR, double* WORK, int* IWORK, double pivmin, double spdiam) {
    int maxitr, i1, i2, nint, prev, i, k, ii, cnt, savi1, iter, olnint, p, next;
    double left, mid, right, width, tmp, fac;
    if (n <= 0) return;
    maxitr = (int)((log(spdiam + pivmin) - log(pivmin)) / log(2.0)) + 2;
    i1 = ifirst;
    i2 = ilast;
    nint = 0;
    prev = 0;
    for (i = i1; i <= i2; i++) {
        k = 2 * i;
        ii = i - offset;
        left = W[ii] - WERR[ii];
        mid = W[ii];
        right = W[ii] + WERR[ii];
        width = right - mid;
        tmp = rl_max(fabs(left), fabs(right));
        if (width < rtol * tmp) {
            IWORK[k - 1] = -1;
            if (i == i1 && i < i2) i1 = i + 1;
            if (prev >= i1 && i <= i2) IWORK[2 * prev - 1] = i + 1;
        } else {
            prev = i;
            fac = 1.0;
            for (;;) {
                cnt = rl_sturm_count(n, D, E2, left);
                if (cnt > i - 1) { left = left - WERR[ii] * fac; fac = 2.0 * fac; } else break;
            }
            fac = 1.0;
            for (;;) {
                cnt = rl_sturm_count(n, D, E2, right);
                if (cnt < i) { right = right + WERR[ii] * fac; fac = 2.0 * fac; } else break;
            }
            nint++;
            IWORK[k - 1] = i + 1;
            IWORK[k] = cnt;
        }
        WORK[k - 1] = left;
        WORK[k] = right;
    }
    savi1 = i1;
    iter = 0;
    do {
        prev = i1 - 1;
        i = i1;
        olnint = nint;
        for (p = 1; p <= olnint; p++) {
            k = 2 * i;
            ii = i - offset;
            next = IWORK[k - 1];
            left = WORK[k - 1];
            right = WORK[k];
            mid = 0.5 * (left + right);
            width = right - mid;
            tmp = rl_max(fabs(left), fabs(right));
            if (width < rtol * tmp || iter == maxitr) {
                nint--;
                IWORK[k - 1] = 0;
                if (i1 == i) i1 = next;
                else if (prev >= i1) IWORK[2 * prev - 1] = next;
                i = next;
                continue;
            }
            prev = i;
            cnt = rl_sturm_count(n, D, E2, mid);
            if (cnt <= i - 1) WORK[k - 1] = mid;
            else WORK[k] = mid;
            i = next;
        }
        iter++;
    } while (nint > 0 && iter <= maxitr);
    rl_bisected(savi1, ilast, offset, W, WERR, WORK, IWORK);
}

/* dstemr (jobz 'V', range 'A', tryrac): eigenvalues w [n] ascending and
 * vectors z [n, n] (column-major) of the tridiagonal (d, e). d and e are
 * overwritten. Returns 0, or LAPACK's nonzero info (dsyevr then falls back to
 * dstebz and dstein, which this port does not follow). */
static int rl_dstemr(int n, double* d, double* e, double* w, double* z) {
    const double safmin = RL_SAFMIN, eps = RL_EPS, minrgp = 1.0e-3;
    double smlnum = safmin / eps, bignum = 1.0 / smlnum, rmin = sqrt(smlnum),
           rmax = rl_min(sqrt(bignum), 1.0 / sqrt(sqrt(safmin))), scale = 1.0, tnrm, thresh, rtol1, rtol2, r1, r2,
           cs, sn, tmp;
    double *D = d - 1, *E = e - 1, *buf, *E2, *WORK, *GERS, *Wl, *WERR, *WGAP, *Dcopy;
    int *ibuf, *ISUPPZ, *IWORK, i, j, jj, info, yesrel;
    rl_spectrum sp;
    if (n == 0) return 0;
    if (n == 1) { w[0] = d[0]; z[0] = 1.0; return 0; }
    if (n == 2) {
        rl_dlaev2(d[0], e[0], d[1], &r1, &r2, &cs, &sn);
        w[0] = r2; z[0] = -sn; z[1] = cs;
        w[1] = r1; z[2] = cs; z[3] = sn;
        if (w[1] < w[0]) {  /* dlaev2 orders by absolute value; dstemr then sorts */
            w[0] = r1; w[1] = r2;
            z[0] = cs; z[1] = sn; z[2] = -sn; z[3] = cs;
        }
        return 0;
    }
    tnrm = 0.0;
    for (i = 1; i <= n; i++) tnrm = rl_max(tnrm, fabs(D[i]));
    for (i = 1; i <= n - 1; i++) tnrm = rl_max(tnrm, fabs(E[i]));
    if (tnrm > 0.0 && tnrm < rmin) scale = rmin / tnrm;
    else if (tnrm > rmax) scale = rmax / tnrm;
    if (scale != 1.0) {
        for (i = 1; i <= n; i++) D[i] = scale * D[i];
        for (i = 1; i <= n - 1; i++) E[i] = scale * E[i];
        tnrm = tnrm * scale;
    }
    /* dlarrr: does T warrant relative accuracy (scaled diagonal dominance)? */
    {
        double offdig = 0.0, offdig2, t1 = sqrt(fabs(D[1])), t2;
        yesrel = t1 >= rmin;
        for (i = 2; yesrel && i <= n; i++) {
            t2 = sqrt(fabs(D[i]));
            if (t2 < rmin) { yesrel = 0; break; }
            offdig2 = fabs(E[i - 1]) / (t1 * t2);
            if (offdig + offdig2 >= 0.999) { yesrel = 0; break; }
            t1 = t2;
            offdig = offdig2;
        }
    }
    thresh = yesrel ? eps : -eps;
    buf = (double*)malloc(sizeof(double) * (size_t)(n * 21 + 21));
    ibuf = (int*)malloc(sizeof(int) * (size_t)(n * 12 + 12));
    if (!buf || !ibuf) { free(buf); free(ibuf); return -100; }
    E2 = buf;                 /* [n] */
    GERS = buf + n + 1;       /* [2n] */
    Wl = GERS + 2 * n + 1;    /* [n] */
    WERR = Wl + n + 1;        /* [n] */
    WGAP = WERR + n + 1;      /* [n] */
    WORK = WGAP + n + 1;      /* [12n] */
    Dcopy = WORK + 12 * n + 1; /* [n]: T's diagonal, for dlarrj */
    for (i = 1; i <= n; i++) Dcopy[i] = D[i];
    ISUPPZ = ibuf;            /* [2n] */
    IWORK = ibuf + 2 * n + 1; /* [7n] */
    sp.isplit = IWORK + 7 * n + 1 - 1; /* 1-based views over the remaining ints */
    sp.iblock = sp.isplit + n + 1;
    sp.indexw = sp.iblock + n + 1;
    sp.W = Wl;
    sp.WERR = WERR;
    sp.WGAP = WGAP;
    sp.GERS = GERS;
    for (j = 1; j <= n - 1; j++) E2[j] = E[j] * E[j];
    E2[n] = 0.0;
    rtol1 = sqrt(eps);
    rtol2 = rl_max(sqrt(eps) * 5.0e-3, 4.0 * eps);
    info = rl_dlarre(n, D, E, E2, thresh, &sp, WORK);
    if (info != 0) { free(buf); free(ibuf); return 10 + abs(info); }
    info = rl_dlarrv(n, sp.vl, D, E, sp.pivmin, sp.isplit, sp.m, minrgp, rtol1, rtol2, Wl, WERR, WGAP, sp.iblock,
                     sp.indexw, GERS, z, n, ISUPPZ, WORK, IWORK);
    if (info != 0) { free(buf); free(ibuf); return 20 + abs(info); }
    if (yesrel) {
        /* the eigenvalues refined for relative accuracy on T itself */
        int jblk, ibegin = 1, wbegin = 1, iend, in, wend;
        for (jblk = 1; jblk <= sp.iblock[sp.m]; jblk++) {
            iend = sp.isplit[jblk];
            in = iend - ibegin + 1;
            wend = wbegin - 1;
            while (wend < sp.m && sp.iblock[wend + 1] == jblk) wend++;
            if (wend < wbegin) { ibegin = iend + 1; continue; }
            rl_dlarrj(in, &Dcopy[ibegin - 1], &E2[ibegin - 1], sp.indexw[wbegin], sp.indexw[wend],
                      4.0 * eps, sp.indexw[wbegin] - 1, &Wl[wbegin - 1], &WERR[wbegin - 1], &WORK[0], &IWORK[0],
                      sp.pivmin, tnrm);
            ibegin = iend + 1;
            wbegin = wend + 1;
        }
    }
    if (scale != 1.0) for (i = 1; i <= sp.m; i++) Wl[i] = Wl[i] * (1.0 / scale);
    if (sp.nsplit > 1) {
        for (j = 1; j <= sp.m - 1; j++) {
            i = 0;
            tmp = Wl[j];
            for (jj = j + 1; jj <= sp.m; jj++) if (Wl[jj] < tmp) { i = jj; tmp = Wl[jj]; }
            if (i != 0) {
                Wl[i] = Wl[j];
                Wl[j] = tmp;
                for (jj = 0; jj < n; jj++) {
                    double t = z[(size_t)(i - 1) * n + jj];
                    z[(size_t)(i - 1) * n + jj] = z[(size_t)(j - 1) * n + jj];
                    z[(size_t)(j - 1) * n + jj] = t;
                }
            }
        }
    }
    for (i = 0; i < n; i++) w[i] = Wl[i + 1];
    free(buf);
    free(ibuf);
    return 0;
}


/* dlarf's H C for one reflector H = I - tau (1, v)(1, v)', v below row 0 of
 * c's rows (len rows, m columns), as dorm2r applies it; work [m] */
static void rl_dlarf_left(int len, int m, const double* v, double tau, double* c, int ldc, double* work) {
    int j, r;
    double temp;
    rl_dgemv_t(len, m, 1.0, c, ldc, v, 0.0, work);
    for (j = 0; j < m; j++) {
        if (work[j] != 0.0) {
            temp = -tau * work[j];
            for (r = 0; r < len; r++) RL_A(c, ldc, r, j) = RL_A(c, ldc, r, j) + v[r] * temp;
        }
    }
}

/* dlarft('F', 'C'): the triangular factor T [k, k] (ldt) of the block
 * reflector H(1) ... H(k) whose vectors are v's columns (n rows, unit
 * diagonal implied) */
static void rl_dlarft_fc(int n, int k, const double* v, int ldv, const double* tau, double* t, int ldt) {
    int i, j, lastv, prevlastv = n, r;
    double temp;
    for (i = 1; i <= k; i++) {
        prevlastv = prevlastv > i ? prevlastv : i;
        if (tau[i - 1] == 0.0) {
            for (j = 1; j <= i; j++) RL_A(t, ldt, j - 1, i - 1) = 0.0;
            continue;
        }
        for (lastv = n; lastv >= i + 1; lastv--)
            if (RL_A(v, ldv, lastv - 1, i - 1) != 0.0) break;
        for (j = 1; j <= i - 1; j++) RL_A(t, ldt, j - 1, i - 1) = -tau[i - 1] * RL_A(v, ldv, i - 1, j - 1);
        j = lastv < prevlastv ? lastv : prevlastv;
        rl_dgemv_t(j - i, i - 1, -tau[i - 1], &RL_A(v, ldv, i, 0), ldv, &RL_A(v, ldv, i, i - 1), 1.0,
                   &RL_A(t, ldt, 0, i - 1));
        /* dtrmv('U', 'N', 'N'): t(1:i-1, i) := T(1:i-1, 1:i-1) t(1:i-1, i) */
        for (j = 1; j <= i - 1; j++) {
            double xj = RL_A(t, ldt, j - 1, i - 1);
            if (xj != 0.0) {
                temp = xj;
                for (r = 1; r <= j - 1; r++)
                    RL_A(t, ldt, r - 1, i - 1) = RL_A(t, ldt, r - 1, i - 1) + temp * RL_A(t, ldt, r - 1, j - 1);
                RL_A(t, ldt, j - 1, i - 1) = RL_A(t, ldt, j - 1, i - 1) * RL_A(t, ldt, j - 1, j - 1);
            }
        }
        RL_A(t, ldt, i - 1, i - 1) = tau[i - 1];
        prevlastv = i > 1 ? (prevlastv > lastv ? prevlastv : lastv) : lastv;
    }
}

/* dlarfb('L', 'N', 'F', 'C'): C [m, n] := H C for the block reflector of
 * v [m, k] (unit lower trapezoid) and t [k, k]; work [n, k] (ldw) */
static void rl_dlarfb_lnfc(int m, int n, int k, const double* v, int ldv, const double* t, int ldt, double* c,
                           int ldc, double* w, int ldw) {
    int i, j, l;
    double temp;
    if (m <= 0 || n <= 0) return;
    /* W := C1' (the first k rows of C, transposed) */
    for (j = 0; j < k; j++)
        for (i = 0; i < n; i++) RL_A(w, ldw, i, j) = RL_A(c, ldc, j, i);
    /* W := W V1 (dtrmm 'R', 'L', 'N', 'U') */
    for (j = 0; j < k; j++)
        for (l = j + 1; l < k; l++)
            if (RL_A(v, ldv, l, j) != 0.0) {
                temp = RL_A(v, ldv, l, j);
                for (i = 0; i < n; i++) RL_A(w, ldw, i, j) = RL_A(w, ldw, i, j) + temp * RL_A(w, ldw, i, l);
            }
    if (m > k) {
        /* W := W + C2' V2 (dgemm 'T', 'N') */
        for (j = 0; j < k; j++)
            for (i = 0; i < n; i++) {
                temp = 0.0;
                for (l = k; l < m; l++) temp = temp + RL_A(c, ldc, l, i) * RL_A(v, ldv, l, j);
                RL_A(w, ldw, i, j) = temp + RL_A(w, ldw, i, j);
            }
    }
    /* W := W T' (dtrmm 'R', 'U', 'T', 'N') */
    for (l = 0; l < k; l++) {
        for (j = 0; j < l; j++)
            if (RL_A(t, ldt, j, l) != 0.0) {
                temp = RL_A(t, ldt, j, l);
                for (i = 0; i < n; i++) RL_A(w, ldw, i, j) = RL_A(w, ldw, i, j) + temp * RL_A(w, ldw, i, l);
            }
        temp = RL_A(t, ldt, l, l);
        if (temp != 1.0)
            for (i = 0; i < n; i++) RL_A(w, ldw, i, l) = temp * RL_A(w, ldw, i, l);
    }
    if (m > k) {
        /* C2 := C2 - V2 W' (dgemm 'N', 'T', alpha -1) */
        for (j = 0; j < n; j++)
            for (l = 0; l < k; l++) {
                temp = -RL_A(w, ldw, j, l);
                for (i = k; i < m; i++) RL_A(c, ldc, i, j) = RL_A(c, ldc, i, j) + temp * RL_A(v, ldv, i, l);
            }
    }
    /* W := W V1' (dtrmm 'R', 'L', 'T', 'U') */
    for (l = k - 1; l >= 0; l--)
        for (j = l + 1; j < k; j++)
            if (RL_A(v, ldv, j, l) != 0.0) {
                temp = RL_A(v, ldv, j, l);
                for (i = 0; i < n; i++) RL_A(w, ldw, i, j) = RL_A(w, ldw, i, j) + temp * RL_A(w, ldw, i, l);
            }
    /* C1 := C1 - W' */
    for (j = 0; j < k; j++)
        for (i = 0; i < n; i++) RL_A(c, ldc, j, i) = RL_A(c, ldc, j, i) - RL_A(w, ldw, i, j);
}

/* dormtr('L', 'L', 'N') as dsyevr calls it: Z := Q Z, Q = H(1) ... H(n - 1)
 * with the reflectors below A's subdiagonal, rows 2..n of Z [n, m] changed.
 * dsyevr gives dormqr 31 n of workspace, so from about order 144 it applies
 * the reflectors in blocks of (31 n - 4160) / n (dlarft, dlarfb), below one
 * by one (dorm2r). work [(m + 65) * 64]. */
static void rl_dormtr_lln(int n, int m, double* a, int lda, const double* tau, double* c, int ldc, double* work) {
    const int nbmax = 64, ldt = nbmax + 1, tsize = ldt * nbmax;
    int rows = n - 1, k = n - 1, nb = 32, i, ib, i1;
    double* A2 = &RL_A(a, lda, 1, 0); /* dormqr's A: the reflectors' matrix from row 2 */
    double* C2 = &RL_A(c, ldc, 1, 0);
    if (rows <= 0 || m <= 0) return;
    if (nb > 1 && nb < k) nb = (31 * n - tsize) / m;  /* dormqr: lwork < its optimum */
    if (nb < 2 || nb >= k) {
        for (i = k; i >= 1; i--) {
            double* v = &RL_A(A2, lda, i - 1, i - 1);
            double aii;
            if (tau[i - 1] == 0.0) continue;
            aii = v[0];
            v[0] = 1.0;
            rl_dlarf_left(rows - i + 1, m, v, tau[i - 1], &RL_A(C2, ldc, i - 1, 0), ldc, work);
            v[0] = aii;
        }
        return;
    }
    i1 = ((k - 1) / nb) * nb + 1;
    for (i = i1; i >= 1; i -= nb) {
        ib = nb < k - i + 1 ? nb : k - i + 1;
        rl_dlarft_fc(rows - i + 1, ib, &RL_A(A2, lda, i - 1, i - 1), lda, &tau[i - 1], work + (size_t)m * nb, ldt);
        rl_dlarfb_lnfc(rows - i + 1, m, ib, &RL_A(A2, lda, i - 1, i - 1), lda, work + (size_t)m * nb, ldt,
                       &RL_A(C2, ldc, i - 1, 0), ldc, work, m);
    }
}

/* R's eigen(A, symmetric = TRUE) before its reversal: dsyevr('V', 'A', 'L')
 * on A [n, n] (column-major, lower triangle read, overwritten); w [n]
 * ascending, z [n, n] the vectors. Returns 0, or nonzero where reference
 * LAPACK would leave dstemr for dstebz and dstein (not ported). */
static int rl_dsyevr(int n, double* a, double* w, double* z) {
    const double safmin = RL_SAFMIN, eps = RL_EPS;
    double smlnum = safmin / eps, bignum = 1.0 / smlnum, rmin = sqrt(smlnum),
           rmax = rl_min(sqrt(bignum), 1.0 / sqrt(sqrt(safmin))), anrm = 0.0, sigma = 1.0;
    double *d, *e, *tau, *work;
    int i, j, info, iscale = 0;
    if (n <= 0) return 0;
    if (n == 1) { w[0] = a[0]; z[0] = 1.0; return 0; }
    for (j = 0; j < n; j++)
        for (i = j; i < n; i++) anrm = rl_max(anrm, fabs(RL_A(a, n, i, j)));
    if (anrm > 0.0 && anrm < rmin) { iscale = 1; sigma = rmin / anrm; }
    else if (anrm > rmax) { iscale = 1; sigma = rmax / anrm; }
    if (iscale)
        for (j = 0; j < n; j++) rl_dscal(n - j, sigma, &RL_A(a, n, j, j));
    d = (double*)malloc(sizeof(double) * ((size_t)n * (4 + RL_SYTRD_NB) + (size_t)(n + 65) * 64));
    if (!d) return -100;
    e = d + n;
    tau = e + n;
    work = tau + n;  /* dsytrd's [n, 28], then dormtr's [(n + 65) * 64] */
    rl_dsytrd_l(n, a, n, d, e, tau, work);
    info = rl_dstemr(n, d, e, w, z);
    if (info == 0) {
        rl_dormtr_lln(n, n, a, n, tau, z, n, work);
        if (iscale) for (i = 0; i < n; i++) w[i] = (1.0 / sigma) * w[i];
    }
    free(d);
    return info;
}
#endif
