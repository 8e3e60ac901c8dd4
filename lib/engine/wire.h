/*
 * The slow path's messages: each rank's records (to rank 0) and rank 0's
 * responses (to every rank), as bytes. Readers check every length, so a
 * malformed message is an error, not a crash.
 */
#ifndef RONDO_ENGINE_WIRE_H
#define RONDO_ENGINE_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "engine/coordinator.h"
#include "engine/responses.h"

/* A growing byte buffer; failed: an allocation failed (the bytes are
 * incomplete). */
typedef struct {
  char *p;
  size_t len, cap;
  int failed;
} eng_buf_t;

/* Records: a count, then each record. */
rondo_status_t eng_wire_put_records(eng_buf_t *b, const eng_record_t *recs, uint32_t n);
/* Decodes n records from p (len bytes) into *recs (malloc'd, with copies of
 * the strings; free with eng_records_free). */
rondo_status_t eng_wire_get_records(const char *p, size_t len, eng_record_t **recs,
                                    uint32_t *n);
void eng_records_free(eng_record_t *recs, uint32_t n);

/* Responses: a count, then each response. */
rondo_status_t eng_wire_put_responses(eng_buf_t *b, const eng_cycle_t *c);
/* Appends the responses in p (len bytes) to c. */
rondo_status_t eng_wire_get_responses(const char *p, size_t len, eng_cycle_t *c);

#endif /* RONDO_ENGINE_WIRE_H */
