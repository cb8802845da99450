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
