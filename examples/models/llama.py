"""A small Llama-style decoder: token embedding, pre-norm RMSNorm layers with
rotary position embeddings and grouped-query causal attention, SiLU-gated MLP,
final norm and LM head. Seeded random weights.

Two forwards:
- forward(tokens): a causal pass over a whole sequence, no cache;
- forward(tokens, input_pos) with kv_cache=True: tokens [1, T] at the positions
  input_pos [T] (int64, what ExecuTorch's LLM runner passes), keys and values
  written into per-layer cache buffers [1, max_seq_len, kv_heads, head_dim] at
  those positions, attention over the whole cache with a mask from the positions.
  Heads stay in the [1, T, heads, head_dim] layout of the projections (rotary
  embedding included); only sdpa's view transposes them, so a backend that attends
  over the cache directly (et_vk.vkd_sdpa_kv_cache) needs no transposes at all.
  The positions are data, never a shape: one exported program serves prefill
  (T up to max_seq_len) and decode (T = 1), and a decode step changes no size.
"""
import torch
from torch import nn
from torch.nn import functional as F


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


class Attention(nn.Module):
    def __init__(self, dim, heads, kv_heads, cache_len=0):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.wq = nn.Linear(dim, heads * self.head_dim, bias=False)
        self.wk = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(heads * self.head_dim, dim, bias=False)
        if cache_len:
            # Not in the state dict: weights load by name without them.
            shape = (1, cache_len, kv_heads, self.head_dim)
            self.register_buffer("k_cache", torch.zeros(shape), persistent=False)
            self.register_buffer("v_cache", torch.zeros(shape), persistent=False)

    def forward(self, x, cos, sin, input_pos=None, mask=None):
        """x [B, T, dim]; cos and sin [T, 1, head_dim] (shared by the heads)."""
        b, t, _ = x.shape
        q = self.wq(x).view(b, t, self.heads, self.head_dim)
        k = self.wk(x).view(b, t, self.kv_heads, self.head_dim)
        v = self.wv(x).view(b, t, self.kv_heads, self.head_dim)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if input_pos is None:
            k, v = k.transpose(1, 2), v.transpose(1, 2)
            out = F.scaled_dot_product_attention(q.transpose(1, 2), k, v, is_causal=True, enable_gqa=True)
        else:
            # In place, at the positions (data): the cache's size never changes.
            self.k_cache.index_copy_(1, input_pos, k)
            self.v_cache.index_copy_(1, input_pos, v)
            out = F.scaled_dot_product_attention(q.transpose(1, 2), self.k_cache.transpose(1, 2),
                                                 self.v_cache.transpose(1, 2), attn_mask=mask, enable_gqa=True)
        return self.wo(out.transpose(1, 2).reshape(b, t, -1))


class FeedForward(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class DecoderLayer(nn.Module):
    def __init__(self, dim, heads, kv_heads, hidden, eps, cache_len=0):
        super().__init__()
        self.attention_norm = nn.RMSNorm(dim, eps=eps)
        self.attention = Attention(dim, heads, kv_heads, cache_len)
        self.ffn_norm = nn.RMSNorm(dim, eps=eps)
        self.feed_forward = FeedForward(dim, hidden)

    def forward(self, x, cos, sin, input_pos=None, mask=None):
        x = x + self.attention(self.attention_norm(x), cos, sin, input_pos, mask)
        return x + self.feed_forward(self.ffn_norm(x))


class Llama(nn.Module):
    def __init__(self, vocab=1000, dim=256, layers=4, heads=8, kv_heads=2, hidden=768, max_seq_len=128,
                 rope_theta=10000.0, eps=1e-5, seed=0, kv_cache=False, full_logits=None):
        super().__init__()
        torch.manual_seed(seed)
        self.max_seq_len = max_seq_len
        self.kv_cache = kv_cache
        # With the cache, generation needs the last position's logits only (as ExecuTorch's own
        # Llama export without generate_full_logits): the output projection runs on one row and one
        # row goes to the host, whatever the prompt length.
        self.full_logits = not kv_cache if full_logits is None else full_logits
        cache_len = max_seq_len if kv_cache else 0
        self.tok_embeddings = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(
            DecoderLayer(dim, heads, kv_heads, hidden, eps, cache_len) for _ in range(layers)
        )
        self.norm = nn.RMSNorm(dim, eps=eps)
        self.output = nn.Linear(dim, vocab, bias=False)
        # Rotary tables for every position, rotate-half layout: [max_seq_len, head_dim].
        head_dim = dim // heads
        inv_freq = 1.0 / rope_theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
        angles = torch.outer(torch.arange(max_seq_len, dtype=torch.float32), inv_freq)
        angles = torch.cat([angles, angles], dim=-1)
        self.register_buffer("rope_cos", angles.cos(), persistent=False)
        self.register_buffer("rope_sin", angles.sin(), persistent=False)

    def forward(self, tokens, input_pos=None):
        """Logits [1, T, vocab] ([1, 1, vocab], the last position's, unless full_logits). With input_pos
        (kv_cache=True): the tokens' positions [T], int64."""
        mask = None
        if input_pos is None:
            t = tokens.shape[1]
            cos, sin = self.rope_cos[:t], self.rope_sin[:t]
        else:
            if not self.kv_cache:
                raise ValueError("input_pos given, but this Llama was built without kv_cache=True")
            cos, sin = self.rope_cos[input_pos], self.rope_sin[input_pos]
            # Query i sees the cache entries at positions <= input_pos[i].
            mask = torch.arange(self.max_seq_len, device=tokens.device)[None, :] <= input_pos[:, None]
        cos, sin = cos[:, None], sin[:, None]  # [T, 1, head_dim]: one row per position, for every head
        x = self.tok_embeddings(tokens)
        for layer in self.layers:
            x = layer(x, cos, sin, input_pos, mask)
        if not self.full_logits:
            x = x[:, -1:]
        return self.output(self.norm(x))

    def reset_cache(self):
        for layer in self.layers:
            layer.attention.k_cache.zero_()
            layer.attention.v_cache.zero_()

    @staticmethod
    def example_inputs(batch=1, seq=32, vocab=1000):
        torch.manual_seed(1)
        return (torch.randint(0, vocab, (batch, seq)),)
