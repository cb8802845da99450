"""The espeak-ng speech clips the Whisper tests decode: several voices and speeds, 3 to 60
seconds, two longer than one 30-second window, one in German. make_clips writes them as 16 kHz
16-bit WAV files (espeak-ng speaks at 22.05 kHz; sox converts, without dither: sox dithers with
fresh random noise on every run by default, so the clips, and with them every transcript
measured on them, differed from run to run)."""
import subprocess
from pathlib import Path

LONG = ("The history of the bicycle is a story of many small improvements. Early machines had no "
        "pedals at all, and riders pushed them along with their feet. Later, pedals were fixed "
        "to the front wheel, which grew larger and larger to travel further with each turn. "
        "These tall machines were fast but dangerous, and a rider who hit a stone could fall a "
        "long way. The safety bicycle changed everything: two wheels of the same size, a chain "
        "to the back wheel, and air filled tyres that made the ride smooth. Within a few years "
        "millions of people were riding to work, to school and into the countryside, and the "
        "bicycle became one of the most useful machines ever built.")

# (voice, words per minute, text); the first five are under 30 seconds.
CLIPS = [
    ("en-us", 150, "Hello there. This is a test of the speech recognition system, running on a "
                   "small board."),
    ("en-gb", 180, "Please remember to save your work before closing the application, otherwise "
                   "changes may be lost."),
    ("en-us+f3", 120, "One, two, three, four, five. Counting numbers is easy when you take your "
                      "time."),
    ("en-sc", 160, "A journey of a thousand miles begins with a single step, as the old saying "
                   "goes, and every step matters when you are walking through the mountains on "
                   "a cold and windy morning in early spring."),
    ("de", 150, "Guten Morgen, wie geht es Ihnen heute? Das Wetter ist schön."),
    ("en-us+m3", 200, "The train to the city leaves at half past seven from platform two."),
    ("en-gb+f2", 140, "Water boils at one hundred degrees at sea level, but at the top of a high "
                      "mountain it boils at a lower temperature, so cooking takes longer."),
    ("en-us", 130, "Small devices can now run speech recognition without a network connection, "
                   "which keeps private conversations on the device and works in places where "
                   "there is no signal, such as tunnels, ships and remote farms."),
    ("en-gb", 170, LONG),
    ("en-us+f3", 135, LONG + " Today the bicycle is still the cheapest way to travel, and cities "
                      "around the world are building new lanes so that more people can ride "
                      "safely."),
]


def make_clips(out, clips=CLIPS):
    """Writes clip{i}.wav into `out` (unless present) and returns their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, (voice, speed, text) in enumerate(clips):
        wav = out / f"clip{i}.wav"
        if not wav.exists():
            raw, tmp = out / f"clip{i}-22k.wav", out / f"clip{i}.tmp.wav"
            subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-w", str(raw), text],
                           check=True)
            subprocess.run(["sox", "-D", str(raw), "-r", "16000", "-b", "16", str(tmp)], check=True)
            raw.unlink()
            tmp.rename(wav)
        paths.append(wav)
    return paths
