/* targets.h - fuzz targets for the parsers of untrusted bytes on the privacy path: window
 * records (release), ledger files (core), θ JSON (calibrate/release), configuration --set
 * values (core). Each takes any bytes and must neither crash nor leak; the libFuzzer mains
 * (fuzz_*.c, preset "fuzz") and the unit suite's corpus replay (tests/privacy) call them. */
#ifndef GCDP_FUZZ_TARGETS_H
#define GCDP_FUZZ_TARGETS_H

#include <stddef.h>
#include <stdint.h>

int gcdp_fuzz_window(const uint8_t *data, size_t size);
int gcdp_fuzz_ledger(const uint8_t *data, size_t size);
int gcdp_fuzz_theta(const uint8_t *data, size_t size);
int gcdp_fuzz_config(const uint8_t *data, size_t size);
/* CSV inputs: byte 0 chooses calibrate's CSV matrix (with a ts column), calibrate's
 * Occupancy format, or the learner's data CSV; the rest is the file. */
int gcdp_fuzz_csv(const uint8_t *data, size_t size);

#endif
