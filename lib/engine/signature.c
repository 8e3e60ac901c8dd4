/* Signatures (signature.h). */
#include "engine/signature.h"

int eng_sig_equal(const eng_sig_t *a, const eng_sig_t *b)
{
  return a->kind == b->kind && a->dtype == b->dtype && a->op == b->op && a->algo == b->algo &&
         a->root == b->root && a->mem == b->mem && a->count == b->count &&
         a->rows == b->rows && a->prescale == b->prescale && a->postscale == b->postscale &&
         a->tag == b->tag && a->flags == b->flags && a->group == b->group &&
         a->group_size == b->group_size;
}

int eng_sig_match(const eng_sig_t *a, const eng_sig_t *b)
{
  if (a->kind != ENG_ALLGATHER || b->kind != ENG_ALLGATHER)
    return eng_sig_equal(a, b);
  eng_sig_t c = *b;
  c.rows = a->rows;
  return eng_sig_equal(a, &c);
}

int eng_sig_serves(const eng_sig_t *decided, const eng_sig_t *mine)
{
  return eng_sig_match(decided, mine) &&
         (decided->kind != ENG_ALLGATHER || decided->rows == ENG_ROWS_DIFFER ||
          decided->rows == mine->rows);
}

const char *eng_kind_name(int kind)
{
  static const char *const names[ENG_KINDS] = {"allreduce", "broadcast", "allgather",
                                               "reduce-scatter", "all-to-all", "refused"};
  return kind >= 0 && kind < ENG_KINDS ? names[kind] : "?";
}
