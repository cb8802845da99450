"""A deterministic corpus of mixed text for tokenizer comparisons: English prose, code, numbers,
CJK, Cyrillic, Arabic, emoji, accents, runs of spaces, tabs and newlines, contractions in any
case, and the special-token strings of the families Kestrel runs. cases(seed) returns a list of
strings (each a few hundred characters); together they are over 20,000 characters.
"""
import random

PROSE = [
    "The kestrel is a small falcon that hovers in the wind while it hunts.",
    "It feeds on voles, mice and large insects; it nests on cliffs, in trees and on buildings.",
    "I'm sure they'll say it's fine, but we've seen what'd happen if you'D ask THEY'RE ready.",
    "Don't stop—it isn't over… “Quoted text” and ‘single quotes’ — dashes – and more.",
    "Café, naïve, résumé, Ångström, façade, jalapeño, Straße, œuvre, ğüşiöç.",
]
CODE = [
    "def f(x):\n    return x ** 2 + 3*x - 1  # comment\n",
    "for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }\n",
    "if __name__ == '__main__':\n\tmain()\n",
    "const url = `https://example.com/api?q=${query}&page=2`;\n",
    "<div class=\"note\">&lt;b&gt;bold&lt;/b&gt;</div>\n",
    "x=[1,2,3];y={'a':1,\"b\":2.5e-3}\r\n",
]
NUMBERS = ["3.14159", "1,234,567.89", "2024-11-23", "0x1F", "1e10", "42", "007", "123456789012",
           "½ ¼ ¾", "٣٤٥", "①②③", "Ⅻ"]
WORLD = [
    "日本語のテキストと漢字。", "中文文本，标点符号。", "한국어 문장입니다.",
    "Привет, мир! Съешь же ещё этих мягких французских булок.", "Ελληνικά γράμματα.",
    "مرحبا بالعالم", "שלום עולם", "हिन्दी पाठ", "ภาษาไทย",
]
EMOJI = ["😀", "👍🏽", "🇫🇷", "👨‍👩‍👧‍👦", "🦅", "❤️", "✨🚀"]
SPACES = ["  ", "   ", "\t", "\t\t", "\n", "\n\n", " \n ", "\r\n", "    \n\t  ", "\u00a0", "\u3000"]
SPECIALS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<start_of_turn>", "<end_of_turn>",
            "<bos>", "<eos>", "<pad>", "<|begin_of_text|>", "<|eot_id|>", "<mask>", "<unk>",
            "<|im_start|>user\nhi<|im_end|>\n"]
GROUPS = [PROSE, CODE, NUMBERS, WORLD, EMOJI, SPACES, SPECIALS]

# What BERT's normalizer and WordPiece treat specially: its special tokens typed in text (and
# look-alikes that are not), control and format characters it drops, whitespace it maps, accents
# (precomposed and combining, out of canonical order), case mappings with more than one
# character, CJK ideographs beside kana and Hangul, symbols that are ASCII punctuation, words
# over 100 characters, URLs and e-mail addresses.
BERT = [
    "[MASK]", "[CLS]", "[SEP]", "[UNK]", "[PAD]", "[mask]", "[ MASK ]", "[MASK][MASK]", "x[MASK]y",
    "[[MASK]]", "[MASK", "MASK]", "Paris is the [MASK] of France.",
    "a\x00b\x07c\x0bd\x0ce\x1bf\x7fg\x85h\u200bi\u200dj\ufeffk\ufffdl\u00adm",
    "tab\there\u2028line\u2029para\u1680ogham\u2007fig\u202fnarrow\u205fmath\u3000ideo",
    "İstanbul İI ΣΊΣΥΦΟΣ ǅungla ﬁne ﬀ ẞ ß Ὰͅ ǰ ŉ Ωmega K Å",
    "e\u0301e\u0323\u0301 a\u0301\u0323 o\u0308\u0304 Z\u0327\u030c n\u0303 \u0301alone",
    "Ｆｕｌｌｗｉｄｔｈ　ＡＢＣ１２３！ ｶﾀｶﾅ ①②",
    "中文混合English日本語のかなカナ한국어漢字𠀀𪜀𫝀𫠠𬺰丽",
    "$100 + 5% = ^caret^ `tick` |pipe| ~tilde~ <tag> a=b €5 £3 ¥7 ©® ™ §1 ¶ †‡ •…",
    "pneumonoultramicroscopicsilicovolcanoconiosis" * 3,
    "a" * 100, "b" * 101, "unaffable" * 11 + "x",
    "https://example.com/path?query=1&x=%20#frag mailto:someone@example.org C:\\dir\\file.txt",
    "don't can't won't I'm you're it's ''quoted'' \"double\"",
    "\U0001f600\U0001f970\U0001fae0 \u2764\ufe0f \U0001f468\u200d\U0001f469\u200d\U0001f467",
    "   leading and trailing   ", "\n\n\r\n", "",
]


def bert_cases(seed=4321, n_cases=60, case_chars=400):
    """cases() drawn from every group plus BERT, and each BERT string alone."""
    rng = random.Random(seed)
    groups = GROUPS + [BERT, BERT]
    out = list(BERT)
    for _ in range(n_cases):
        parts = []
        while sum(len(p) for p in parts) < case_chars:
            parts.append(rng.choice(rng.choice(groups)))
            parts.append(rng.choice([" ", "", "\n", "  ", ", ", ".", "\t"]))
        out.append("".join(parts))
    return out


def cases(seed=1234, n_cases=48, case_chars=520):
    rng = random.Random(seed)
    out = []
    for _ in range(n_cases):
        parts = []
        while sum(len(p) for p in parts) < case_chars:
            group = rng.choice(GROUPS)
            parts.append(rng.choice(group))
            parts.append(rng.choice([" ", "", "\n", "  ", ", ", "."]))
        out.append("".join(parts))
    return out


if __name__ == "__main__":
    cs = cases()
    print(len(cs), "cases,", sum(len(c) for c in cs), "characters")
    bs = bert_cases()
    print(len(bs), "BERT cases,", sum(len(c) for c in bs), "characters")
