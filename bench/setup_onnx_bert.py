#!/usr/bin/env python3
"""Builds the ONNX Runtime side of the encoder benchmark from a Hugging Face BERT checkpoint,
without torch: the ONNX graph is written op by op with the `onnx` helper API straight from
model.safetensors.

  OUT_DIR/NAME-f32.onnx    BertModel + sentence-transformers pooling (+ L2 normalize when the
                           folder's modules.json lists it), f32 weights, written with standard
                           ONNX ops (Gather, Add, LayerNormalization, MatMul, Softmax, Erf, ...,
                           opset 17) in the pattern torch exports, then put through ONNX
                           Runtime's BERT optimizer (onnxruntime.transformers.optimizer,
                           model_type "bert"): one fused Attention op per layer,
                           SkipLayerNormalization, BiasGelu (--no-fuse keeps the plain graph)
  OUT_DIR/NAME-int8.onnx   onnxruntime.quantization.quantize_dynamic of it: int8 weights
                           (QInt8, i.e. U8S8 with uint8 activations, which ONNX Runtime's docs
                           recommend trying first on x86-64), per output channel (per-tensor
                           scales, --per-tensor, lose much more: min cosine 0.83 against 0.96
                           for MiniLM on the corpus)

Inputs: input_ids, attention_mask, token_type_ids, each int64 [batch, seq]; output
sentence_embedding float [batch, hidden]. Attention masks padding with -10000 on the scores,
mean pooling divides by the mask's sum (as sentence-transformers), normalize is x / max(|x|, 1e-12).
The fused and quantized models keep these inputs and that output.

Both models are checked against the float64 oracle (tests/py/bert_oracle.py) on the embedding
corpus in padded batches of mixed lengths: the f32 model must reach cosine > 0.99999 on every
text, the int8 model's minimum is printed.

usage: setup_onnx_bert.py [--checkpoint models/all-MiniLM-L6-v2] [--out-dir models/onnx]
                          [--name all-MiniLM-L6-v2] [--weight-type QInt8|QUInt8] [--per-tensor]
                          [--no-fuse] [--force]
Run in .venv-bench (scripts/setup-bench.sh --onnx installs onnx and onnxruntime there).
"""
import argparse
import logging
import math
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "py"))
import bert_oracle  # noqa: E402

try:
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
    from onnxruntime.quantization import QuantType, quantize_dynamic
except ImportError as e:
    sys.exit(f"setup_onnx_bert.py: error: {e}; run it with .venv-bench/bin/python after "
             "scripts/setup-bench.sh --onnx")

OPSET = 17  # LayerNormalization is an ONNX op from 17 on


class Graph:
    """Collects nodes and initializers; every helper returns its output's name."""

    def __init__(self):
        self.nodes, self.inits, self.n = [], [], 0

    def const(self, array, name=None):
        name = name or f"c{len(self.inits)}"
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def op(self, kind, inputs, **attrs):
        self.n += 1
        out = f"{kind.lower()}_{self.n}"
        self.nodes.append(helper.make_node(kind, inputs, [out], name=f"{kind}_{self.n}", **attrs))
        return out


def build(ckpt):
    """ModelProto of the encoder + pooling (+ normalize), weights f32."""
    c = ckpt.config
    w = {k: v.astype(np.float32) if v.dtype.kind == "f" else v for k, v in ckpt.w.items()}
    hidden, n_heads = c["hidden_size"], c["num_attention_heads"]
    head_dim, eps = hidden // n_heads, c["layer_norm_eps"]
    g = Graph()

    def linear(x, prefix):
        # torch Linear weight is [out, in]: MatMul by its transpose, stored transposed once.
        y = g.op("MatMul", [x, g.const(np.ascontiguousarray(w[prefix + ".weight"].T),
                                       prefix + ".weight_t")])
        return g.op("Add", [y, g.const(w[prefix + ".bias"], prefix + ".bias")])

    def norm(x, prefix):
        return g.op("LayerNormalization", [x, g.const(w[prefix + ".weight"], prefix + ".weight"),
                                           g.const(w[prefix + ".bias"], prefix + ".bias")],
                    axis=-1, epsilon=eps)

    # Embeddings; positions 0..seq-1 from the input's shape.
    word = g.op("Gather", [g.const(w["embeddings.word_embeddings.weight"], "word_emb"),
                           "input_ids"], axis=0)
    seq = g.op("Gather", [g.op("Shape", ["input_ids"]), g.const(np.array(1, np.int64))], axis=0)
    positions = g.op("Range", [g.const(np.array(0, np.int64)), seq,
                               g.const(np.array(1, np.int64))])
    pos = g.op("Gather", [g.const(w["embeddings.position_embeddings.weight"], "pos_emb"),
                          positions], axis=0)
    types = g.op("Gather", [g.const(w["embeddings.token_type_embeddings.weight"], "type_emb"),
                            "token_type_ids"], axis=0)
    x = norm(g.op("Add", [g.op("Add", [word, pos]), types]), "embeddings.LayerNorm")

    # Additive key mask [batch, 1, 1, seq]: 0 for tokens, -10000 for padding, built exactly as
    # Hugging Face's BERT exports it (Unsqueeze, Unsqueeze, Cast, 1 - m, * -10000) so that ONNX
    # Runtime's BERT optimizer recognizes it and fuses each layer into one Attention op.
    m4 = g.op("Unsqueeze", [g.op("Unsqueeze", ["attention_mask", g.const(np.array([1], np.int64))]),
                            g.const(np.array([2], np.int64))])
    key_bias = g.op("Mul", [g.op("Sub", [g.const(np.float32(1)),
                                         g.op("Cast", [m4], to=TensorProto.FLOAT)]),
                            g.const(np.float32(-10000.0))])

    split_shape = g.const(np.array([0, 0, n_heads, head_dim], np.int64))
    merge_shape = g.const(np.array([0, 0, hidden], np.int64))
    sqrt_head_dim = g.const(np.float32(math.sqrt(head_dim)))
    for il in range(c["num_hidden_layers"]):
        p = f"encoder.layer.{il}."
        q = g.op("Transpose", [g.op("Reshape", [linear(x, p + "attention.self.query"),
                                                split_shape])], perm=[0, 2, 1, 3])
        k = g.op("Transpose", [g.op("Reshape", [linear(x, p + "attention.self.key"),
                                                split_shape])], perm=[0, 2, 3, 1])
        v = g.op("Transpose", [g.op("Reshape", [linear(x, p + "attention.self.value"),
                                                split_shape])], perm=[0, 2, 1, 3])
        scores = g.op("Add", [g.op("Div", [g.op("MatMul", [q, k]), sqrt_head_dim]), key_bias])
        ctx = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
        ctx = g.op("Reshape", [g.op("Transpose", [ctx], perm=[0, 2, 1, 3]), merge_shape])
        x = norm(g.op("Add", [linear(ctx, p + "attention.output.dense"), x]),
                 p + "attention.output.LayerNorm")
        h = linear(x, p + "intermediate.dense")
        # GELU(erf) as torch exports it: 0.5 * h * (1 + erf(h / sqrt 2)).
        erf = g.op("Erf", [g.op("Div", [h, g.const(np.float32(math.sqrt(2.0)))])])
        h = g.op("Mul", [g.op("Mul", [h, g.op("Add", [erf, g.const(np.float32(1))])]),
                         g.const(np.float32(0.5))])
        x = norm(g.op("Add", [linear(h, p + "output.dense"), x]), p + "output.LayerNorm")

    if ckpt.pooling != ["mean"]:
        raise ValueError(f"pooling {ckpt.pooling}: only mean pooling is built (the benchmark's "
                         "models use it)")
    maskf = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    m = g.op("Unsqueeze", [maskf, g.const(np.array([2], np.int64))])            # [b, s, 1]
    axis1 = g.const(np.array([1], np.int64))
    summed = g.op("ReduceSum", [g.op("Mul", [x, m]), axis1], keepdims=0)        # [b, h]
    count = g.op("Max", [g.op("ReduceSum", [m, axis1], keepdims=0), g.const(np.float32(1e-9))])
    out = g.op("Div", [summed, count])
    if ckpt.normalize:
        l2 = g.op("ReduceL2", [out], axes=[-1], keepdims=1)  # axes an attribute until opset 18
        out = g.op("Div", [out, g.op("Max", [l2, g.const(np.float32(1e-12))])])
    g.nodes.append(helper.make_node("Identity", [out], ["sentence_embedding"], name="output"))

    ints = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "seq"])
            for n in ("input_ids", "attention_mask", "token_type_ids")]
    outs = [helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT,
                                          ["batch", hidden])]
    graph = helper.make_graph(g.nodes, "bert_sentence_embedding", ints, outs, g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="kestrel bench/setup_onnx_bert.py")
    model.ir_version = 8  # widely loadable; opset 17 needs IR >= 8
    onnx.checker.check_model(model, full_check=True)
    return model


def fuse(model, ckpt):
    """ONNX Runtime's own BERT graph optimizer (onnxruntime.transformers), as its docs do for
    BERT on CPU before quantizing: one Attention op per layer (with the padding mask),
    SkipLayerNormalization, BiasGelu. Fails loudly when attention does not fuse, since an unfused
    graph would make a weaker baseline than ONNX Runtime users get."""
    from onnxruntime.transformers.optimizer import optimize_model
    logging.getLogger("onnxruntime.transformers").setLevel(logging.ERROR)  # producer-name note
    c = ckpt.config
    opt = optimize_model(model, model_type="bert", num_heads=c["num_attention_heads"],
                         hidden_size=c["hidden_size"], opt_level=0)
    fused = opt.get_fused_operator_statistics()
    if fused.get("Attention", 0) != c["num_hidden_layers"]:
        raise RuntimeError(f"ONNX Runtime's BERT optimizer fused {fused.get('Attention', 0)} "
                           f"attention ops, not {c['num_hidden_layers']}: {fused}")
    print("fused:", ", ".join(f"{k} {v}" for k, v in fused.items() if v))
    return opt


def padded(id_lists):
    """(input_ids, attention_mask, token_type_ids) int64 [batch, longest], right-padded with 0."""
    seq = max(len(i) for i in id_lists)
    ids = np.zeros((len(id_lists), seq), np.int64)
    mask = np.zeros_like(ids)
    for r, i in enumerate(id_lists):
        ids[r, :len(i)] = i
        mask[r, :len(i)] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}


def check(path, ckpt, texts, want, batch=16):
    """Cosines of the ONNX model's embeddings against the oracle's, batches in corpus order (so
    lengths mix within a batch and padding is exercised)."""
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    ids = bert_oracle.tokenize(ckpt, texts)
    got = np.concatenate([sess.run(None, padded(ids[i:i + batch]))[0]
                          for i in range(0, len(ids), batch)]).astype(np.float64)
    return (got * want).sum(1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(want, axis=1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", default=str(REPO / "models" / "all-MiniLM-L6-v2"))
    ap.add_argument("--out-dir", default=str(REPO / "models" / "onnx"))
    ap.add_argument("--name", help="file stem (default: the checkpoint folder's name)")
    ap.add_argument("--weight-type", choices=["QInt8", "QUInt8"], default="QInt8")
    ap.add_argument("--per-tensor", action="store_true",
                    help="one int8 scale per weight matrix (default: per output channel)")
    ap.add_argument("--no-fuse", action="store_true",
                    help="skip ONNX Runtime's BERT optimizer (no fused Attention)")
    ap.add_argument("--min-cosine", type=float, default=0.99999)
    ap.add_argument("--force", action="store_true", help="rebuild even when the files exist")
    args = ap.parse_args()

    try:
        ckpt = bert_oracle.Checkpoint.load(args.checkpoint)
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"setup_onnx_bert.py: error: {e} (scripts/fetch-model.sh fetches MiniLM)")
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = args.name or Path(args.checkpoint).resolve().name
    f32, int8 = out_dir / f"{stem}-f32.onnx", out_dir / f"{stem}-int8.onnx"

    if args.force or not f32.exists():
        tmp = f32.with_suffix(".part.onnx")
        model = build(ckpt)
        if args.no_fuse:
            onnx.save(model, str(tmp))
        else:
            fuse(model, ckpt).save_model_to_file(str(tmp))  # adds the com.microsoft opset
        tmp.replace(f32)
    if args.force or not int8.exists():
        tmp = int8.with_suffix(".part.onnx")
        # Its root-logger advice to pre-process first is moot: the graph is already optimized.
        logging.getLogger().setLevel(logging.ERROR)
        quantize_dynamic(str(f32), str(tmp), weight_type=getattr(QuantType, args.weight_type),
                         per_channel=not args.per_tensor,
                         # ONNX's shape inference knows no com.microsoft ops (the fused ones):
                         # tensors it cannot type are f32 here.
                         extra_options={"DefaultTensorType": TensorProto.FLOAT})
        tmp.replace(int8)

    sys.path.insert(0, str(REPO / "tests" / "py"))
    from embed_corpus import TEXTS
    want = bert_oracle.embed(ckpt, bert_oracle.tokenize(ckpt, TEXTS))
    ok = True
    for path, need in ((f32, args.min_cosine), (int8, None)):
        cos = check(path, ckpt, TEXTS, want)
        verdict = "" if need is None else (" ok" if cos.min() > need else f" FAIL (need > {need})")
        ok &= need is None or bool(cos.min() > need)
        print(f"{path.name}: {path.stat().st_size / 1e6:.1f} MB, cosine vs oracle on "
              f"{len(TEXTS)} texts: min {cos.min():.7f} (1 - min = {1 - cos.min():.1e}), "
              f"mean {cos.mean():.7f}{verdict}")
    if not ok:
        sys.exit("setup_onnx_bert.py: error: the f32 ONNX model disagrees with the oracle")


if __name__ == "__main__":
    main()
