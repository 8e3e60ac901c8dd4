/*
 * The negotiation's packet (packet.h). The header says what the inline data
 * holds and where the packet's parts are, so that the MPI reduction needs
 * nothing but the packets.
 */
#include "engine/packet.h"

#include "reduce/reduce.h"

#include <pthread.h>
#include <stdlib.h>

/* Inline bytes per packet: every negotiation carries them, used or not.
 * 256 on one node: 1 KiB made the negotiations of a burst of 1000 small
 * requests 10% slower (rondo-bench fusion --tensors 1000 --size 1K), 256
 * costs nothing measurable. Across nodes fewer: they cross the network. */
#define INLINE_BYTES_NODE 256
#define INLINE_BYTES_NET 64

uint64_t eng_inline_head(int cache_id, const eng_sig_t *sig)
{
  return (uint64_t)(cache_id + 1) << 32 | (uint64_t)sig->dtype << 24 | (uint64_t)sig->op << 16 |
         sig->count;
}

uint64_t *eng_packet_words(unsigned char *p)
{
  eng_inline_t *h = (eng_inline_t *)p;
  return (uint64_t *)(h->data + h->cap);
}

/* MPI_User_function: the words AND; the data reduced with rondo's kernels
 * when both packets carry the same request's, the partial result of the
 * lower ranks first (as the argument check's packets do, agree.c), so every
 * rank gets the same bytes whatever the reduction's tree. */
static void packet_reduce(void *in, void *inout, int *len, MPI_Datatype *type)
{
  (void)type;
  unsigned char *pa = in, *pb = inout;
  for (int k = 0; k < *len; k++) {
    eng_inline_t *a = (eng_inline_t *)pa, *b = (eng_inline_t *)pb;
    size_t size = sizeof(eng_inline_t) + a->cap + a->words * sizeof(uint64_t);
    if (a->head != 0 && a->head == b->head) {
      rondo_dtype_t dtype = (rondo_dtype_t)(a->head >> 24 & 0xff);
      rondo_op_t op = (rondo_op_t)(a->head >> 16 & 0xff);
      const unsigned char *lo = a->first < b->first ? a->data : b->data;
      const unsigned char *hi = a->first < b->first ? b->data : a->data;
      reduce_apply(b->data, lo, hi, (size_t)(a->head & 0xffff), dtype,
                   op == RONDO_AVG ? RONDO_SUM : op);
    } else {
      b->head = 0;
    }
    b->first = a->first < b->first ? a->first : b->first;
    const uint64_t *wa = eng_packet_words(pa);
    uint64_t *wb = eng_packet_words(pb);
    for (uint64_t i = 0; i < a->words; i++)
      wb[i] &= wa[i];
    pa += size;
    pb += size;
  }
}

static pthread_once_t op_once = PTHREAD_ONCE_INIT;
static MPI_Op packet_op = MPI_OP_NULL;
static int packet_op_rc = MPI_SUCCESS;

static void create_op(void)
{
  packet_op_rc = MPI_Op_create(packet_reduce, 1, &packet_op);
}

rondo_status_t eng_packet_op(MPI_Op *op)
{
  pthread_once(&op_once, create_op);
  if (packet_op_rc != MPI_SUCCESS)
    return rondo__mpi_fail(packet_op_rc, "MPI_Op_create", __FILE__, __LINE__);
  *op = packet_op;
  return RONDO_SUCCESS;
}

rondo_status_t eng_packet_create(eng_packet_t *p, int node_count, int bit_words, int cache_capacity)
{
  MPI_Op op;
  RONDO_CHECK(eng_packet_op(&op));
  p->inline_bytes = node_count > 1 ? INLINE_BYTES_NET : INLINE_BYTES_NODE;
  p->bytes = sizeof(eng_inline_t) + p->inline_bytes + (size_t)bit_words * 8;
  if ((p->bufs = calloc(2, p->bytes)) == NULL ||
      (p->by_id = calloc((size_t)cache_capacity + 1, sizeof *p->by_id)) == NULL)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "engine: negotiation packets");
  MPI_CHECK(MPI_Type_contiguous((int)p->bytes, MPI_BYTE, &p->type));
  MPI_CHECK(MPI_Type_commit(&p->type));
  return RONDO_SUCCESS;
}

void eng_packet_free(eng_packet_t *p, int mpi_usable)
{
  if (p->type != MPI_DATATYPE_NULL && mpi_usable)
    MPI_CHECK_LOG(MPI_Type_free(&p->type));
  free(p->bufs);
  free(p->by_id);
  p->bufs = NULL;
  p->by_id = NULL;
}
