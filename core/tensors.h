/* Internal: validation of the tensors of one call. */
#ifndef TXATTN_CORE_TENSORS_H
#define TXATTN_CORE_TENSORS_H

#include "txattn/txattn.h"

/* Checks t against the resolved problem r and writes *out: t with every all-zero layout made
   explicit. Inputs may alias each other or broadcast (stride 0); o must not alias itself nor
   overlap q, k or v. Fails with TXATTN_E_INVALID and a message naming the field; never touches the
   tensors' data. */
txattn_status txattn__tensors_check(const txattn_problem *r, const txattn_tensors *t,
                                    txattn_tensors *out);

#endif
