"""``parts-en``: an English catalogue of standard mechanical and electrical parts, searched by part number.

The catalogue is a fictional shop's: its product cards are made by :func:`documents` from the
public designations and dimensions of standard parts (deep groove ball bearings of the ISO 15
series 60, 62 and 63 and the miniature 608 / 625 / 626; ISO 4762 socket head cap screws, ISO 4032
hex nuts, ISO 7089 washers; AS568 O-rings; 5 x 20 mm glass fuses of IEC 60127-2; GT2 belts and
pulleys; LM..UU linear bearings), their dimensions as in the makers' tables to the best of the
author's knowledge (not checked against the standards' texts: a test catalogue, not a reference).
Part numbers come in look-alike families (6204 / 6024 / 6304, ZZ / 2RS, M6x20 / M6x12), as in a
real catalogue, so that the number, not the topic, names the product.

The queries (:data:`QUERIES`) were written by hand before any system was run on them, each with a
rule that selects the products it asks for from their attributes (all of them are judged relevant,
grade 1; e.g. "6204 bearing" judges the three 6204 variants). Kinds: ``code`` (a part number or
designation, in the catalogue's spelling or a common other one), ``spec`` (attributes in a few
keywords, no part number), ``need`` (what the part is for). ``python -m benchmarks.data.build``
writes the BEIR files.
"""

from __future__ import annotations

from typing import Any, Callable

Part = dict[str, Any]

# -- bearings: designation -> (bore d, outside D, width B) in mm -------------------------------------
BEARINGS = {
    "6000": (10, 26, 8),
    "6001": (12, 28, 8),
    "6002": (15, 32, 9),
    "6003": (17, 35, 10),
    "6004": (20, 42, 12),
    "6005": (25, 47, 12),
    "6006": (30, 55, 13),
    "6007": (35, 62, 14),
    "6008": (40, 68, 15),
    "6200": (10, 30, 9),
    "6201": (12, 32, 10),
    "6202": (15, 35, 11),
    "6203": (17, 40, 12),
    "6204": (20, 47, 14),
    "6205": (25, 52, 15),
    "6206": (30, 62, 16),
    "6207": (35, 72, 17),
    "6208": (40, 80, 18),
    "6300": (10, 35, 11),
    "6301": (12, 37, 12),
    "6302": (15, 42, 13),
    "6303": (17, 47, 14),
    "6304": (20, 52, 15),
    "6305": (25, 62, 17),
    "6306": (30, 72, 19),
    "6307": (35, 80, 21),
    "6308": (40, 90, 23),
    "608": (8, 22, 7),
    "625": (5, 16, 5),
    "626": (6, 19, 6),
}
SERIES_USE = {
    "60": "Extra-light series for compact housings: gearboxes, fans, power tools and office machines.",
    "62": "Light series, the most common size range: electric motors, pumps, conveyor rollers and agricultural "
    "machinery.",
    "63": "Medium series with larger balls for heavier radial loads: compressors, crushers, heavy motors and wheel "
    "hubs.",
    "608": "The size used in skateboard, inline skate and scooter wheels, fidget spinners and 3D printer idler "
    "pulleys.",
    "625": "Miniature size common in 3D printer extruders, small stepper motors and model making.",
    "626": "Miniature size used in small electric motors, vacuum cleaner brushes and 3D printer idlers.",
}
SEALS = {
    "OPEN": (
        "open",
        "Open design without shields or seals, for oil-lubricated housings; supplied lightly oiled, not greased.",
    ),
    "ZZ": (
        "ZZ",
        "Two non-contact metal shields (ZZ, also written 2Z), greased for life; low friction for higher speeds in "
        "clean, dry places.",
    ),
    "2RS": (
        "2RS",
        "Two rubber contact seals (2RS, also written 2RSH or 2RS1), greased for life; keeps out dust and splashed "
        "water.",
    ),
}


def _bearings() -> list[Part]:
    out = []
    for code, (d, big_d, b) in BEARINGS.items():
        series = code if len(code) == 3 else code[:2]
        for seal, (label, seal_text) in SEALS.items():
            number = code if seal == "OPEN" else f"{code}-{label}"
            alt = "" if seal == "OPEN" else f" Also listed as {code}{label}."
            out.append(
                {
                    "_id": f"brg-{code}-{seal.lower()}",
                    "family": "bearing",
                    "code": code,
                    "seal": seal,
                    "d": d,
                    "D": big_d,
                    "B": b,
                    "title": f"Deep groove ball bearing {number}, {d} x {big_d} x {b} mm",
                    "text": (
                        f"Single row deep groove ball bearing {number}: bore {d} mm, outside diameter {big_d} mm, "
                        f"width {b} mm. {seal_text}{alt} Chrome steel rings and balls, pressed steel cage, normal "
                        f"clearance. {SERIES_USE[series]}"
                    ),
                }
            )
    return out


# -- metric fasteners ------------------------------------------------------------------------------
# size -> (pitch, cap screw head diameter, hex key, nut width across flats, nut height, washer d1, d2, h)
METRIC = {
    "M3": (0.5, 5.5, 2.5, 5.5, 2.4, 3.2, 7, 0.5),
    "M4": (0.7, 7, 3, 7, 3.2, 4.3, 9, 0.8),
    "M5": (0.8, 8.5, 4, 8, 4.7, 5.3, 10, 1.0),
    "M6": (1.0, 10, 5, 10, 5.2, 6.4, 12, 1.6),
    "M8": (1.25, 13, 6, 13, 6.8, 8.4, 16, 1.6),
    "M10": (1.5, 16, 8, 16, 8.4, 10.5, 20, 2.0),
}
LENGTHS = {
    "M3": (8, 12, 16),
    "M4": (10, 16, 20),
    "M5": (10, 16, 25),
    "M6": (12, 20, 30),
    "M8": (16, 25, 40),
    "M10": (20, 30, 50),
}
SCREW_GRADES = {
    "12.9": ("12.9", "alloy steel, property class 12.9, black oxide finish; the strongest grade, for machine building"),
    "A2": ("A2", "stainless steel A2-70 (304), plain finish; for damp and outdoor use"),
}
NUT_GRADES = {
    "8-ZN": ("8", "steel, property class 8, zinc plated"),
    "A2": ("A2", "stainless steel A2-70 (304)"),
}


def _fasteners() -> list[Part]:
    out = []
    for size, (pitch, head, key, af, m, d1, d2, h) in METRIC.items():
        for length in LENGTHS[size]:
            for grade, (label, material) in SCREW_GRADES.items():
                number = f"ISO4762-{size}x{length}-{grade}"
                out.append(
                    {
                        "_id": f"shcs-{size.lower()}x{length}-{grade.lower().replace('.', '')}",
                        "family": "screw",
                        "size": size,
                        "length": length,
                        "grade": grade,
                        "stainless": grade == "A2",
                        "title": f"Socket head cap screw {size} x {length} mm, {label} ({number})",
                        "text": (
                            f"Hexagon socket head cap screw to ISO 4762 (formerly DIN 912), thread {size} x {pitch} "
                            f"coarse, length {length} mm under the head, head diameter {head} mm, hex key {key} mm. "
                            f"Material: {material}. Part number {number}, sold in packs of 50."
                        ),
                    }
                )
        for grade, (label, material) in NUT_GRADES.items():
            number = f"ISO4032-{size}-{grade}"
            out.append(
                {
                    "_id": f"nut-{size.lower()}-{grade.lower()}",
                    "family": "nut",
                    "size": size,
                    "grade": grade,
                    "stainless": grade == "A2",
                    "title": f"Hex nut {size}, {'stainless A2' if grade == 'A2' else 'zinc plated steel'} ({number})",
                    "text": (
                        f"Hexagon nut to ISO 4032 (replaces DIN 934), thread {size} x {pitch}, width across flats {af} "
                        f"mm, height {m} mm. Material: {material}. Part number {number}, packs of 100."
                    ),
                }
            )
            number = f"ISO7089-{size[1:]}-{'A2' if grade == 'A2' else 'ZN'}"
            out.append(
                {
                    "_id": f"wsh-{size.lower()}-{grade.lower()}",
                    "family": "washer",
                    "size": size,
                    "grade": grade,
                    "stainless": grade == "A2",
                    "title": f"Flat washer for {size}, {'stainless A2' if grade == 'A2' else 'zinc plated steel'} "
                    f"({number})",
                    "text": (
                        f"Plain flat washer to ISO 7089 (formerly DIN 125-A) for {size} bolts and screws: inside "
                        f"diameter {d1} mm, outside diameter {d2} mm, thickness {h} mm, hardness 200 HV. "
                        f"{'Stainless steel A2.' if grade == 'A2' else 'Steel, zinc plated.'} Part number {number}, "
                        "packs of 100."
                    ),
                }
            )
    return out


# -- O-rings: AS568 dash number -> (inside diameter, cross section) in inches -----------------------
ORINGS = {
    "010": (0.239, 0.070),
    "011": (0.301, 0.070),
    "012": (0.364, 0.070),
    "013": (0.426, 0.070),
    "014": (0.489, 0.070),
    "110": (0.362, 0.103),
    "111": (0.424, 0.103),
    "112": (0.487, 0.103),
    "113": (0.549, 0.103),
    "210": (0.734, 0.139),
    "211": (0.796, 0.139),
    "212": (0.859, 0.139),
}
ELASTOMERS = {
    "N70": (
        "NBR",
        "nitrile rubber (NBR, Buna-N), 70 Shore A, black; for mineral oils, fuels, water and air, -30 to +100 C",
    ),
    "V75": (
        "FKM",
        "fluoroelastomer (FKM, Viton type), 75 Shore A, brown; for hot oil, fuels and many chemicals, -20 to +200 C",
    ),
}


def _orings() -> list[Part]:
    out = []
    for dash, (inner, cs) in ORINGS.items():
        for grade, (label, material) in ELASTOMERS.items():
            number = f"AS568-{dash}-{grade}"
            out.append(
                {
                    "_id": f"oring-{dash}-{grade.lower()}",
                    "family": "oring",
                    "dash": dash,
                    "material": label,
                    "id_in": inner,
                    "cs_in": cs,
                    "title": f"O-ring AS568-{dash} {label} ({number})",
                    "text": (
                        f"O-ring to AS568 dash size -{dash}: inside diameter {inner:.3f} in ({inner * 25.4:.2f} mm), "
                        f"cross section {cs:.3f} in ({cs * 25.4:.2f} mm). Material: {material}. Part number {number}, "
                        "packs of 25."
                    ),
                }
            )
    return out


# -- 5 x 20 mm glass cartridge fuses ---------------------------------------------------------------
FUSE_RATINGS = ("500mA", "1A", "2A", "3.15A", "5A", "10A")
FUSE_TYPES = {"F": "fast-acting (quick blow)", "T": "time-lag (slow blow, anti-surge)"}


def _fuses() -> list[Part]:
    out = []
    for rating in FUSE_RATINGS:
        amps = float(rating[:-2]) / 1000 if rating.endswith("mA") else float(rating[:-1])
        for kind, label in FUSE_TYPES.items():
            number = f"FUSE-5X20-{kind}{rating}"
            out.append(
                {
                    "_id": f"fuse-{kind.lower()}{rating.lower().replace('.', '')}",
                    "family": "fuse",
                    "kind": kind,
                    "amps": amps,
                    "title": f"Glass fuse 5 x 20 mm {kind}{rating} 250 V, {label.split(' (')[0]} ({number})",
                    "text": (
                        f"Glass cartridge fuse 5 x 20 mm to IEC 60127-2, {label}, rated current {rating}, rated "
                        f"voltage 250 V AC, breaking capacity 35 A. Marked {kind}{rating}L250V. For power supplies, "
                        f"amplifiers and appliances. Part number {number}, packs of 10."
                    ),
                }
            )
    return out


# -- motion: GT2 belts and pulleys, linear bearings ------------------------------------------------
GT2_LOOPS = (200, 280, 400, 610, 852)
GT2_PULLEYS = ((16, 5), (20, 5), (20, 8), (36, 8))
LINEAR = {"LM8UU": (8, 15, 24), "LM10UU": (10, 19, 29), "LM12UU": (12, 21, 30), "LM8LUU": (8, 15, 45)}


def _motion() -> list[Part]:
    out = []
    for length in GT2_LOOPS:
        out.append(
            {
                "_id": f"gt2-loop-{length}",
                "family": "belt",
                "length": length,
                "title": f"GT2 closed loop timing belt {length} mm, 6 mm wide (GT2-{length}-6)",
                "text": (
                    f"Endless GT2 timing belt, 2 mm pitch, {length // 2} teeth, length {length} mm, width 6 mm; rubber "
                    "with fibreglass cords. For 3D printers, plotters and camera sliders. Part number "
                    f"GT2-{length}-6."
                ),
            }
        )
    out.append(
        {
            "_id": "gt2-open-1m",
            "family": "belt",
            "length": None,
            "title": "GT2 open timing belt, 6 mm wide, by the metre (GT2-OPEN-6)",
            "text": "Open GT2 timing belt, 2 mm pitch, 6 mm wide, cut to length per metre; rubber with fibreglass "
            "cords. "
            "For the X and Y axes of 3D printers and CNC machines. Part number GT2-OPEN-6.",
        }
    )
    for teeth, bore in GT2_PULLEYS:
        out.append(
            {
                "_id": f"gt2-pulley-{teeth}t-{bore}",
                "family": "pulley",
                "teeth": teeth,
                "bore": bore,
                "title": f"GT2 pulley {teeth} teeth, {bore} mm bore (GT2-{teeth}T-{bore})",
                "text": (
                    f"Aluminium GT2 timing pulley with {teeth} teeth for 6 mm belts, bore {bore} mm, two M3 set "
                    f"screws. Fits {'NEMA 17 stepper motor shafts' if bore == 5 else '8 mm shafts and lead screws'}. "
                    f"Part number GT2-{teeth}T-{bore}."
                ),
            }
        )
    for code, (d, big_d, length) in LINEAR.items():
        out.append(
            {
                "_id": f"lin-{code.lower()}",
                "family": "linear",
                "code": code,
                "d": d,
                "title": f"Linear ball bearing {code}, {d} mm shaft",
                "text": (
                    f"Linear ball bushing {code} for {d} mm round shafts: outside diameter {big_d} mm, length {length} "
                    f"mm, {'long version, ' if 'L' in code[3:] else ''}steel sleeve with recirculating balls and "
                    "rubber seals. For 3D printer and CNC linear guides."
                ),
            }
        )
    return out


def documents() -> list[Part]:
    return _bearings() + _fasteners() + _orings() + _fuses() + _motion()


# -- queries: (kind, text, the rule selecting its relevant products) ----------------------------------
Rule = Callable[[Part], bool]


def brg(code: str, seal: str | None = None) -> Rule:
    return lambda p: p["family"] == "bearing" and p["code"] == code and (seal is None or p["seal"] == seal)


def screw(size: str, length: int | None = None, grade: str | None = None) -> Rule:
    return lambda p: (
        p["family"] == "screw"
        and p["size"] == size
        and (length is None or p["length"] == length)
        and (grade is None or p["grade"] == grade)
    )


def fam(family: str, **attrs: Any) -> Rule:
    return lambda p: p["family"] == family and all(p.get(k) == v for k, v in attrs.items())


QUERIES: list[tuple[str, str, Rule]] = [
    # code: the part number or designation, in the catalogue's spelling or another common one
    ("code", "6204-2RS", brg("6204", "2RS")),
    ("code", "6204 bearing", brg("6204")),
    ("code", "6205ZZ", brg("6205", "ZZ")),
    ("code", "6302-2RS", brg("6302", "2RS")),
    ("code", "6001 open bearing", brg("6001", "OPEN")),
    ("code", "608 2RS", brg("608", "2RS")),
    ("code", "625ZZ", brg("625", "ZZ")),
    ("code", "6306 ZZ", brg("6306", "ZZ")),
    ("code", "6003-2RS bearing", brg("6003", "2RS")),
    ("code", "6208", brg("6208")),
    ("code", "6300-ZZ", brg("6300", "ZZ")),
    ("code", "626-2RS", brg("626", "2RS")),
    ("code", "6007 2rs", brg("6007", "2RS")),
    ("code", "6201ZZ", brg("6201", "ZZ")),
    ("code", "6305-2RS1", brg("6305", "2RS")),
    ("code", "ISO4762-M6x20-A2", screw("M6", 20, "A2")),
    ("code", "M8x25 12.9", screw("M8", 25, "12.9")),
    ("code", "DIN 912 M5x16", screw("M5", 16)),
    ("code", "M3x8 socket cap screw", screw("M3", 8)),
    ("code", "ISO 4762 M10x50 A2", screw("M10", 50, "A2")),
    ("code", "M4x20 cap screw 12.9", screw("M4", 20, "12.9")),
    ("code", "ISO4032-M8-A2", fam("nut", size="M8", grade="A2")),
    ("code", "DIN 934 M6", fam("nut", size="M6")),
    ("code", "ISO 7089 M10 stainless", fam("washer", size="M10", grade="A2")),
    ("code", "DIN 125 M4 washer", fam("washer", size="M4")),
    ("code", "AS568-112 viton", fam("oring", dash="112", material="FKM")),
    ("code", "AS568-014", fam("oring", dash="014")),
    ("code", "-210 o-ring nbr", fam("oring", dash="210", material="NBR")),
    ("code", "AS568-011-N70", fam("oring", dash="011", material="NBR")),
    ("code", "o-ring 113 FKM", fam("oring", dash="113", material="FKM")),
    ("code", "T3.15A fuse", fam("fuse", kind="T", amps=3.15)),
    ("code", "F1A 5x20", fam("fuse", kind="F", amps=1.0)),
    ("code", "T500mA glass fuse", fam("fuse", kind="T", amps=0.5)),
    ("code", "FUSE-5X20-F10A", fam("fuse", kind="F", amps=10.0)),
    ("code", "GT2-610-6", fam("belt", length=610)),
    ("code", "GT2 20T 8mm", fam("pulley", teeth=20, bore=8)),
    ("code", "LM8UU", fam("linear", code="LM8UU")),
    ("code", "LM12UU bushing", fam("linear", code="LM12UU")),
    ("code", "LM8LUU", fam("linear", code="LM8LUU")),
    # spec: attributes in a few keywords, no part number
    ("spec", "sealed bearing 20mm bore", lambda p: p["family"] == "bearing" and p["d"] == 20 and p["seal"] == "2RS"),
    ("spec", "bearing 25x52x15", lambda p: p["family"] == "bearing" and (p["d"], p["D"], p["B"]) == (25, 52, 15)),
    (
        "spec",
        "shielded bearing 8x22x7",
        lambda p: p["family"] == "bearing" and (p["d"], p["D"]) == (8, 22) and p["seal"] == "ZZ",
    ),
    ("spec", "ball bearing 10mm bore 30mm od", lambda p: p["family"] == "bearing" and (p["d"], p["D"]) == (10, 30)),
    (
        "spec",
        "bearing 17 x 47 x 14 rubber seals",
        lambda p: p["family"] == "bearing" and (p["d"], p["D"]) == (17, 47) and p["seal"] == "2RS",
    ),
    (
        "spec",
        "40mm bore bearing 90mm outside diameter",
        lambda p: p["family"] == "bearing" and (p["d"], p["D"]) == (40, 90),
    ),
    (
        "spec",
        "metal shield bearing 6mm shaft",
        lambda p: p["family"] == "bearing" and p["d"] == 6 and p["seal"] == "ZZ",
    ),
    (
        "spec",
        "open bearing 35 x 62",
        lambda p: p["family"] == "bearing" and (p["d"], p["D"]) == (35, 62) and p["seal"] == "OPEN",
    ),
    ("spec", "stainless socket cap screw m4 16mm", screw("M4", 16, "A2")),
    ("spec", "m6 x 30 allen bolt black", screw("M6", 30, "12.9")),
    ("spec", "m10 hex nut zinc plated", fam("nut", size="M10", grade="8-ZN")),
    ("spec", "m8 washer stainless", fam("washer", size="M8", grade="A2")),
    ("spec", "stainless m3 nuts", fam("nut", size="M3", grade="A2")),
    ("spec", "m5 bolt 25 mm stainless", screw("M5", 25, "A2")),
    (
        "spec",
        "viton o-ring 3/4 inch id",
        lambda p: p["family"] == "oring" and p["dash"] == "210" and p["material"] == "FKM",
    ),
    (
        "spec",
        "nitrile o-ring 0.070 cross section",
        lambda p: p["family"] == "oring" and p["cs_in"] == 0.070 and p["material"] == "NBR",
    ),
    (
        "spec",
        "fkm o ring 0.139 section",
        lambda p: p["family"] == "oring" and p["cs_in"] == 0.139 and p["material"] == "FKM",
    ),
    ("spec", "slow blow fuse 2 amp", fam("fuse", kind="T", amps=2.0)),
    ("spec", "quick blow fuse 5 amp 250v", fam("fuse", kind="F", amps=5.0)),
    ("spec", "anti-surge fuse 10a", fam("fuse", kind="T", amps=10.0)),
    ("spec", "timing belt 400mm closed loop", fam("belt", length=400)),
    ("spec", "gt2 pulley 16 teeth", fam("pulley", teeth=16)),
    ("spec", "linear bearing 10mm rod", fam("linear", code="LM10UU")),
    ("spec", "long linear bushing 8mm", fam("linear", code="LM8LUU")),
    # need: what the part is for, in a user's words
    ("need", "skateboard wheel bearings", brg("608")),
    ("need", "bearings for a heavy compressor 30mm shaft", lambda p: p["family"] == "bearing" and p["code"] == "6306"),
    ("need", "belt for the y axis of my 3d printer", lambda p: p["family"] == "belt" and p["length"] is None),
    ("need", "pulley for a nema 17 motor", lambda p: p["family"] == "pulley" and p["bore"] == 5),
    (
        "need",
        "seal ring for hot oil half inch",
        lambda p: p["family"] == "oring" and p["dash"] == "112" and p["material"] == "FKM",
    ),
    ("need", "fuse for an amplifier that blows at switch on", lambda p: p["family"] == "fuse" and p["kind"] == "T"),
    (
        "need",
        "rust proof screws for the garden m6",
        lambda p: p["family"] == "screw" and p["size"] == "M6" and p["grade"] == "A2",
    ),
    (
        "need",
        "bearing for an oil bath gearbox 15mm shaft",
        lambda p: p["family"] == "bearing" and p["d"] == 15 and p["seal"] == "OPEN",
    ),
    (
        "need",
        "dust proof bearing for a conveyor roller 25 mm",
        lambda p: p["family"] == "bearing" and p["code"] == "6205" and p["seal"] == "2RS",
    ),
    ("need", "extruder bearing 5mm", brg("625")),
]
