#!/usr/bin/env python3
"""Generate a BlueLibrary archive document of N albums for scripts/bench.

    scripts/bench-dataset.py N OUTFILE [--seed S]

Writes OUTFILE atomically (via OUTFILE.tmp): the `PUT /archive` format
({"format":"bluelibrary.archive","formatVersion":1,"albums":[...],"states":[]}), one album
per line. Deterministic for a given N and seed. Ids are valid ULIDs (26 Crockford base32
characters, 48-bit millisecond time + 80 random bits), unique and strictly ascending in
library order; createdAt is the id's time, updatedAt the same or later. Titles, artists,
genres, years and cover URLs look like a real collection, with some non-ASCII text (accents,
CJK, Cyrillic, emoji) and some null years / cover URLs.
"""
import json
import os
import random
import sys
import time
from datetime import datetime, timezone

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

ADJ = ["Blue", "Silent", "Electric", "Golden", "Broken", "Midnight", "Wild", "Lonely", "Crystal",
       "Burning", "Hidden", "Endless", "Velvet", "Paper", "Neon", "Distant", "Frozen", "Sweet",
       "Dark", "Bright", "Wandering", "Secret", "Restless", "Northern", "Summer", "Hollow",
       "Shattered", "Quiet", "Savage", "Gentle", "Fading", "Scarlet", "Cosmic", "Rusty"]
NOUN = ["Sun", "Highway", "Dreams", "Heart", "River", "Machine", "Garden", "Horizon", "Rain",
        "City", "Stars", "Echoes", "Fire", "Ocean", "Shadows", "Mirror", "Road", "Thunder",
        "Roses", "Island", "Avenue", "Lights", "Wolves", "Harbor", "Storm", "Memories",
        "Satellite", "Kingdom", "Letters", "Tides", "Engines", "Moon", "Desert", "Signals"]
TITLE_FORMS = ["{a} {n}", "The {a} {n}", "{n} of the {a} {n2}", "{a} {n} ({y} Remaster)",
               "Songs from the {a} {n}", "{n}", "{a} {n}, Vol. {v}", "Live at the {n}",
               "{n} & {n2}", "Greatest Hits", "Best of {artist}", "{a} {n} (Deluxe Edition)"]
UNICODE_TITLES = ["Ágætis byrjun", "Homogénic", "Für Elise", "Café del Mar", "L'Été indien",
                  "Ça plane pour moi", "Nocturne en mi bémol", "Señorita Noche", "Ωmega",
                  "Сильнее всех", "Кино в городе", "夜に駆ける", "東京の夜", "雨の日",
                  "月光", "사랑의 노래", "Straße der Lieder", "Øresund", "Smörgåsbord",
                  "Ночной ветер", "🌙 Moonlight", "Coração vagabundo", "Él y ella", "Nuées ardentes"]
FIRST = ["John", "Mary", "David", "Anna", "Luis", "Sofia", "James", "Emma", "Carlos", "Nina",
         "Peter", "Grace", "Marco", "Ella", "Tom", "Lucy", "Ray", "Ava", "Sam", "Iris"]
LAST = ["Smith", "Johnson", "Martin", "Garcia", "Brown", "Walker", "Young", "King", "Wright",
        "Lopez", "Hill", "Scott", "Green", "Adams", "Baker", "Nelson", "Carter", "Mitchell"]
BAND_FORMS = ["The {n}", "{a} {n}", "The {a} {n}", "{n} Club", "{a} Society", "{n} & the {n2}"]
UNICODE_ARTISTS = ["Björk", "Sigur Rós", "Motörhead", "Mötley Crüe", "Beyoncé", "Céline Dion",
                   "Zoé", "Ry Cooder & Ali Farka Touré", "坂本龍一", "宇多田ヒカル", "Кино",
                   "Сплин", "Hélène Grimaud", "Mariza Fadó", "Jóhann Jóhannsson", "Los Fabulosos Cadillacs",
                   "Manu Chao", "Ayọ", "Ólafur Arnalds", "BTS (방탄소년단)", "Zaz", "Stromae"]
GENRES = (["Rock"] * 8 + ["Pop"] * 8 + ["Jazz"] * 3 + ["Electronic"] * 4 + ["Hip-Hop"] * 4 +
          ["Classical"] * 2 + ["Folk"] * 2 + ["Metal"] * 2 + ["R&B"] * 2 + ["Country"] * 2 +
          ["Reggae", "Blues", "Soul", "Punk", "Indie", "Ambient", "Latin", "World", "Música popular brasileira", "J-Pop"])


def ulid(ms, rnd):
    v = (ms << 80) | rnd
    out = []
    for _ in range(26):
        out.append(CROCKFORD[v & 31])
        v >>= 5
    return "".join(reversed(out))


def iso(ms):
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (ms % 1000)


def main():
    args = sys.argv[1:]
    seed = 20240501
    if "--seed" in args:
        i = args.index("--seed"); seed = int(args[i + 1]); del args[i:i + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    n, outfile = int(args[0]), args[1]
    rng = random.Random(seed)
    artists = []
    for _ in range(max(50, n // 40)):        # ~40 albums per artist on average
        r = rng.random()
        if r < 0.05:
            artists.append(rng.choice(UNICODE_ARTISTS))
        elif r < 0.55:
            artists.append("%s %s" % (rng.choice(FIRST), rng.choice(LAST)))
        else:
            artists.append(rng.choice(BAND_FORMS).format(a=rng.choice(ADJ), n=rng.choice(NOUN), n2=rng.choice(NOUN)))
    start_ms = 1546300800000                 # 2019-01-01T00:00:00Z
    ms = start_ms
    t0 = time.time()
    tmp = outfile + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write('{"format":"bluelibrary.archive","formatVersion":1,"library":"default","albums":[\n')
        for i in range(n):
            ms += rng.randint(1, 60000)      # strictly increasing time -> ascending, unique ids
            artist = rng.choice(artists)
            year = rng.randint(1955, 2024)
            if rng.random() < 0.04:
                title = rng.choice(UNICODE_TITLES)
            else:
                title = rng.choice(TITLE_FORMS).format(a=rng.choice(ADJ), n=rng.choice(NOUN), n2=rng.choice(NOUN),
                                                     y=year + rng.randint(10, 30), v=rng.randint(1, 5), artist=artist)
            aid = ulid(ms, rng.getrandbits(80))
            album = {
                "id": aid,
                "title": title,
                "artist": artist,
                "genre": rng.choice(GENRES),
                "year": None if rng.random() < 0.05 else year,
                "coverUrl": None if rng.random() < 0.1 else "https://covers.example.com/album/%s.jpg" % aid.lower(),
                "createdAt": iso(ms),
                "updatedAt": iso(ms + (rng.randint(0, 86400000 * 30) if rng.random() < 0.2 else 0)),
            }
            f.write(("," if i else "") + json.dumps(album, ensure_ascii=False, separators=(",", ":")) + "\n")
        f.write('],"states":[]}\n')
    os.replace(tmp, outfile)
    print("generated %d albums in %.1f s: %s (%d bytes)" % (n, time.time() - t0, outfile, os.path.getsize(outfile)),
          file=sys.stderr)


if __name__ == "__main__":
    main()
