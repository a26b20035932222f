"""Shared forward passes for the zero-shot detectors: one pass per text per model.

The engine is a package of small modules, each owning one part (lowest first; a module
imports only modules above it in this list). The entry points are
:func:`passes.single_passes` and :func:`passes.pair_passes`; import every name from the
module that defines it (this ``__init__`` re-exports nothing). Names with a leading
underscore are shared between the engine's modules and are not for use outside it.

- ``records``: what one pass yields per text (:class:`SinglePass`, :class:`PairPass`,
  :class:`TooShort`, :class:`Mismatch`).
- ``memo``: reuse and counting (:class:`PassMemo` and the process-wide ``MEMO``;
  :class:`EngineStats` and ``STATS``).
- ``vocab``: the per-position statistics over the vocabulary, in fp32 (``token_stats``,
  ``cross_stats``).
- ``plan``: how a model is run (:class:`Plan`, ``resolve_plan``, ``DEVICE_DEFAULTS``,
  ``plan_workers``).
- ``tokens``: token ids and the truncation cap (``tokenize``, ``model_cap``).
- ``schedule``: running the packs of a pass: the per-model locks, adaptive threads,
  workers side by side, progress (``report_progress``) and cancellation
  (``cancelled_by``, ``PassesCancelled``).
- ``layout``: which texts share a pass (``packs``, ``shared_prefixes``) and the tensors of
  one pass (:class:`Layout`, ``layout_packed``, ``layout_padded``).
- ``attention``: the packed attention kernels (``segments_attention``,
  ``varlen_attention``) and switching a model's attention implementation.
- ``forward``: one forward of a model over a layout (the body, compiled or not; the LM
  head on the scored rows in fp32, chunked, into reusable buffers).
- ``passes``: the entry points: memo look-ups, tokenisation, packing, the forward of each
  pack and its per-position statistics, memo writes.

What one pass yields
--------------------
For one causal LM and one text (tokens x_1..x_n, T = n-1 scored positions), a single
forward pass gives, per position t (logits z_t, M_t = softmax(z_t), label x_{t+1}):

- ``ll[t]``   = log M_t(x_{t+1})                              (log-likelihood)
- ``rank[t]`` = 1 + #{v : z_t(v) > z_t(x_{t+1})}              (strictly greater logits)
- ``ent[t]``  = H(M_t) = -Σ_v M_t(v) log M_t(v)               (nats)
- ``m2[t]``   = Σ_v M_t(v) (log M_t(v))²                      (second moment, Fast-DetectGPT)

:class:`SinglePass` holds these; every single-model statistic of
:mod:`veribench.detectors.local.zeroshot` is a function of them. For a two-model
detector (a sampling/observer model p and a scoring/performer model q on the same
tokens) one pass per model also yields, on the vocabulary cut to min(|V_p|, |V_q|)
as upstream Fast-DetectGPT does, for *all* n positions:

- ``mu[t]`` = Σ_v p_t(v) log q_t(v),  ``m2[t]`` = Σ_v p_t(v) (log q_t(v))²,
- ``ll[t]`` (t < n-1) = log q_t(x_{t+1}) under the cut vocabulary,

in :class:`PairPass`, plus the :class:`SinglePass` of each model.

Reuse
-----
Pass outputs are memoised in-process (:data:`MEMO`), keyed by (model key, text sha)
and (pair key, text sha), so asking for loglik, then logrank, then Fast-DetectGPT on
one model costs one pass per text, and Binoculars + Fast-DetectGPT on the same pair
plus the single-model statistics of either model cost one pass per model. Because a
causal LM's outputs at position t depend only on tokens ≤ t, a pass over the first
k tokens also serves any shorter truncation cap (its arrays are sliced).

Execution (:class:`Plan`, chosen by device, every choice can be forced)
--------------------------------------------------------------------------
Texts are tokenised once (special tokens added as the tokenizer does; truncation keeps
the first ``max_tokens`` tokens, BOS included). Two layouts:

- **packed** (default on every device): texts are concatenated without padding into
  packs of at most ``pack_tokens`` tokens (longest first, the room left filled with the
  shortest texts; a text is never split across packs, so a text longer than a pack gets
  a pack of its own), with per-text position ids (0..n-1 for each text) and
  block-diagonal causal attention, so no position attends across a text boundary and
  no compute is spent on padding. Attention kernels for a pack:
  ``segments`` (each text's slice through transformers' SDPA with ``is_causal``: the
  flash/causal kernel, no mask tensor; CPU default), ``varlen``
  (``torch.nn.attention.varlen.varlen_attn``, FlashAttention's variable-length kernel;
  CUDA with bf16/fp16, default there), ``flash_attention_2`` (transformers' packed
  path, needs the ``flash-attn`` package) or ``sdpa_mask`` (transformers' own packed-
  sequence detection from the position ids, which builds a block-diagonal mask; costs
  L² per pack).
- **padded**: length-sorted batches padded on the right with an attention mask,
  through the model's own attention implementation (the upstream-style baseline).

With the ``segments`` kernel, a prefix that several texts share (fast-detect-gpt's AI
texts continue the first ~30 tokens of their human text) is computed once: the
continuation enters the pack from its first own token, at its true positions, and
attends to the shared tokens through a tree-shaped mask (:func:`shared_prefixes`).

With ``compile`` (CUDA default with ``varlen``), the transformer body runs through
``torch.compile``; packs are padded with dummy segments up to a bucket length (a
multiple of ``bucket_tokens``), so the compiled shapes stay few and recompilation is
bounded. On CPU with ``workers="auto"`` and ``threads="auto"``, packs run side by side,
one per core, each pack single-threaded (``workers`` = torch's threads, at most one per
pack): every core stays busy through the parts of a pass that do not parallelise inside
one pack (attention per text, the vocabulary statistics, Python dispatch), and no two
threads wait on each other inside a matrix product. On the demo's 145 texts (2-core
machine, 9,760 tokens fed) that took the forward from 15-17 s to 11-11.5 s, with
bit-identical outputs (each pack's arithmetic is the same whichever worker runs it). With one worker (one
pack, or a fixed ``threads``), the number of torch threads adapts by measurement: the
first packs run with all cores and with one, the faster is kept and re-checked every
few packs, because on a shared machine two threads that wait on each other ran six
times slower than one.

Precision. The body runs in the model's dtype (bf16/fp16 on GPU); the LM head is applied
only to the rows that are scored, flattened, with an fp32 copy of its weight (logits
are never rounded to half precision), in chunks of at most ``chunk_bytes`` of fp32
logits, and every softmax, log-softmax and vocabulary sum runs in fp32. Per-text
statistics use only each text's own rows of the packed logits. The packed and padded
layouts equal the per-text fp32 reference within 1e-5 (``tests/detectors_local/``).

Every result records the plan that ran (:meth:`Plan.record`, stored as
``detail["engine"]``). The spec's settings (model, cap, dtype) are what changes a
score; the layout, kernels, compilation and threads change it only within 1e-5.
"""
