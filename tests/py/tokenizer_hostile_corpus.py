"""Hostile inputs for the tokenizers, as bytes (issue 35): every byte alone and between letters,
control characters, NUL, invalid UTF-8 (stray continuation bytes, truncated and impossible
sequences), UTF-8-encoded surrogates, overlong forms, code points above U+10FFFF, very long runs
of one character, mixed scripts and strings that look like special tokens.

Each case is (name, bytes, llama_cpp_bpe_aborts): the last is True where llama.cpp 0.3.36's
byte-level BPE throws instead of tokenizing (unicode_cpt_to_utf8 on a code point above U+10FFFF,
which its lax UTF-8 reader produces from F4 90 80 80 .. F7 BF BF BF); llama-cpp-python dies on
those, so the BPE comparison leaves them out and Kestrel's own tests pin what it does instead.

Used by tests/py/compare_tokenizer_llama_cpp.py --corpus hostile and
tests/py/record_tokenizer_hostile_fixture.py (the fixture of tests/model_tokenizer_hostile_test.cc).
"""


def _u(s):
    return s.encode("utf-8", "surrogatepass")


def cases():
    out = []

    def add(name, data, bpe_aborts=False):
        out.append((name, bytes(data), bpe_aborts))

    # Every byte alone and between letters (0x80.. are invalid UTF-8 on their own).
    for b in range(256):
        add(f"byte {b:02X}", [b])
    for b in range(256):
        add(f"a byte {b:02X} b", b"a" + bytes([b]) + b"b")
    for b in (0x00, 0x04, 0x1B, 0x7F, 0x80, 0xC0, 0xFF):
        add(f"spaced byte {b:02X}", b"x " + bytes([b]) + b" y\n" + bytes([b]) + b"z")

    # Control characters: C0 in a sentence, DEL, C1 (as UTF-8), Unicode line separators.
    add("C0 in text", b"Hello" + bytes(range(0, 32)) + b"world")
    add("C0 spaced", b" ".join(bytes([c]) for c in range(32)))
    add("DEL", b"a\x7f\x7fb \x7f")
    add("C1 as UTF-8", _u("x" + "".join(chr(c) for c in range(0x80, 0xA0)) + "y"))
    add("CR LF mix", b"line1\r\nline2\rline3\n\r\n\t\x0b\x0c end")
    add("separators", _u("a\u2028b\u2029c\u0085d\u00a0e\u3000f\u200bg\ufeffh"))
    add("escape sequence", b"\x1b[31mred\x1b[0m \x1b]0;title\x07")
    add("backspaces", b"abc\x08\x08\x08xyz")

    # NUL.
    add("NUL", b"\x00")
    add("NUL in text", b"a\x00b \x00 c\x00\x00d")
    add("NUL run", b"\x00" * 100)

    # Invalid UTF-8.
    add("stray continuations", b"a\x80b\xbfc\x80\x80\x80d")
    add("truncated 2", b"x\xc3")
    add("truncated 3", b"x\xe3\x81")
    add("truncated 4", b"x\xf0\x9f\x98")
    add("truncated mid", b"\xe3\x81 \xf0\x9f\x98x\xc3y")
    add("impossible bytes", b"\xfe\xff\xfe\xfe a \xff\xff")
    add("five-byte form", b"\xf8\x88\x80\x80\x80x")
    add("six-byte form", b"\xfc\x84\x80\x80\x80\x80x")
    add("lead then ASCII", b"\xe2(\xa1 \xc3( \xf0(\x8c(")
    add("invalid in word", b"caf\xe9 na\xefve r\xe9sum\xe9")  # Latin-1, not UTF-8
    add("invalid mix", b"ok \xed\xa0 \xc0 \xe0\x80 \xf4\x8f\xbf \x80\xbf\x80 end")

    # Surrogates encoded in UTF-8 (CESU-8 style), lone and paired.
    add("lone high surrogate", b"\xed\xa0\x80")
    add("lone low surrogate", b"\xed\xbf\xbf")
    add("surrogates in text", b"a\xed\xa0\x80b \xed\xb0\x80 c")
    add("CESU pair", b"x\xed\xa0\xbd\xed\xb8\x80y")  # U+1F600 as two surrogates

    # Overlong forms.
    add("overlong NUL", b"a\xc0\x80b")
    add("overlong slash", b"\xc0\xaf \xe0\x80\xaf \xf0\x80\x80\xaf")
    add("overlong A", b"\xc1\x81\xc1\x82C")
    add("overlong max", b"\xc1\xbf \xe0\x9f\xbf \xf0\x8f\xbf\xbf")

    # Beyond U+10FFFF (llama.cpp's BPE throws on these).
    add("above max code point", b"a\xf4\x90\x80\x80b", bpe_aborts=True)
    add("F5..F7 leads", b"\xf5\x80\x80\x80 \xf7\xbf\xbf\xbf", bpe_aborts=True)

    # Valid but unusual code points.
    add("max code point", _u("\U0010ffff \U000e0001\U000e0041 \ue000\uf8ff"))
    add("noncharacters", _u("\ufffe\uffff\ufdd0 \U0001fffe"))
    add("replacement char", _u("\ufffd\ufffd x \ufffd"))
    add("combining marks", _u("e\u0301 a\u0308\u0304 Z\u0351\u0352\u0357\u035b\u0346"))
    add("zwj emoji", _u("\U0001f468\u200d\U0001f469\u200d\U0001f467 "
                        "\U0001f3f3\ufe0f\u200d\U0001f308"))
    add("flags and skin tones", _u("\U0001f1eb\U0001f1f7\U0001f44d\U0001f3fd"))
    add("bidi marks", _u("abc \u202eevil\u202c \u200f\u200e\u2066x\u2069"))

    # Very long runs of one character.
    add("5000 spaces", b" " * 5000)
    add("5000 a", b"a" * 5000)
    add("2000 emoji", _u("\U0001f600" * 2000))
    add("3000 newlines", b"\n" * 3000)
    add("2000 tabs", b"\t" * 2000)
    add("3000 0x04", b"\x04" * 3000)
    add("3000 0xFF", b"\xff" * 3000)
    add("2000 e-acute", _u("\u00e9" * 2000))
    add("2000 CJK", _u("\u4e2d" * 2000))
    add("spaces then word", b" " * 3000 + b"word" + b" " * 3000)
    add("2000 digits", b"7" * 2000)
    add("1000 dots", b"." * 1000)
    add("1000 less-than", b"<" * 1000)

    # Mixed scripts.
    add("mixed scripts", _u("Hello мир 世界 مرحبا שלום नमस्ते "
                            "γειά 🌍 こんにちは 안녕 ṩ"))
    add("mixed scripts tight", _u("a日b🙂c\u0434d\u05d0e\u0e01f"))
    add("digits of scripts", _u("123 ١٢٣ ۱۲۳ १२३ ๑๒๓ 一二三 ½ ² Ⅻ"))

    # Strings that look like special tokens (with and without special parsing).
    for s in ("<|endoftext|>", "<|im_start|>user\nhi<|im_end|>", "<eos>", "<bos>", "<unk>",
              "<pad>", "<mask>", "<start_of_turn>user\nhi<end_of_turn>", "<0x41><0x00>",
              "<|im_start", "|im_end|>", "<<|endoftext|>>", "<|endoftext|><|endoftext|>"):
        add("special-like " + s, _u(s))
    add("controls around special", b"\x04<|im_start|>\x04<eos>\x00<|endoftext|>\xff")
    return out


def texts(keep_invalid=False):
    """The cases' texts as Python strings; those that are not UTF-8 as bytes with keep_invalid,
    else left out."""
    out = []
    for _, data, _ in cases():
        try:
            out.append(data.decode("utf-8"))
        except UnicodeDecodeError:
            if keep_invalid:
                out.append(data)
    return out
