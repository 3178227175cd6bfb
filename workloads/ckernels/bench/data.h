/* Deterministic synthetic inputs: everything the kernels read is generated from one seed. Part
 * of the protected harness, so a candidate cannot change what is computed on. */
#ifndef CKERNELS_DATA_H
#define CKERNELS_DATA_H

#include <stdint.h>

#include "../block.h"

/* The input x and the upstream gradient dout of one block, [B][T][C] each. */
typedef struct {
    float *x;
    float *dout;
} Inputs;

int inputs_alloc(Inputs *in, Shape s);
void inputs_free(Inputs *in);

/* Fills parameters, input and upstream gradient from the seed (each tensor its own stream). */
void fill_params(Params *p, Shape s, uint64_t seed);
void fill_inputs(Inputs *in, Shape s, uint64_t seed);

/* The 32-bit dropout seed derived from the 64-bit run seed. */
uint32_t dropout_seed(uint64_t seed);

#endif
