#!/usr/bin/env python3
"""Fits the coefficients of vec::exp_polynomial (src/favor/kernels/vector_math.hpp):

    exp(r) ~ 1 + r + r^2 P(r) = 1 + r (1 + r P(r)),  P of degree 4,  |r| <= ln(2)/2,

for the least maximum relative error, by weighted least squares on Chebyshev nodes whose
weights grow where the error peaks (a Lawson iteration). Prints each coefficient rounded to
float32 (highest power first), as src/favor/kernels/vector_math.cpp holds them, and the error before
float arithmetic (the coefficients rounded) in float32 ulps. Needs numpy (Debian: python3-numpy).
"""
import numpy as np

DEGREE = 4
half = np.log(2.0) / 2.0
x = np.cos(np.linspace(0.0, np.pi, 4001)) * half
x = x[np.abs(x) > 1e-4]  # (exp(r) - 1 - r) / r^2 loses its digits near 0
target = (np.exp(x) - 1.0 - x) / x**2
scale = x**2 / np.exp(x)  # so that the residual is the relative error of the whole exp
powers = np.vander(x, DEGREE + 1, increasing=True)
weights = np.ones_like(x)
for _ in range(200):
    c, *_ = np.linalg.lstsq(powers * (weights * scale)[:, None], target * weights * scale, rcond=None)
    error = (1.0 + x + x**2 * (powers @ c) - np.exp(x)) / np.exp(x)
    weights *= np.sqrt(1.0 + np.abs(error) / np.abs(error).max())
c = c.astype(np.float32).astype(np.float64)
error = (1.0 + x + x**2 * (powers @ c) - np.exp(x)) / np.exp(x)
for value in c[::-1]:
    print(repr(float(value)))
print(f"max relative error {np.abs(error).max():.3g} = {np.abs(error).max() / 2**-24:.3f} ulp")
