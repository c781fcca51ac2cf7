"""Builds the imitation of Spider's wta_1 (players ~20k, matches 2013-2017, rankings ~300k; seeded, so
every run writes the same rows): python build_wta_1.py [PATH] (default: wta_1.sqlite beside this file)."""
import datetime as dt
import os
import random
import sqlite3
import sys

P = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "wta_1.sqlite")
rng = random.Random(20240611)

REAL = """Serena|Williams|USA|R|19810926|175
Venus|Williams|USA|R|19800617|185
Angelique|Kerber|GER|L|19880118|173
Simona|Halep|ROU|R|19910927|168
Agnieszka|Radwanska|POL|R|19890306|173
Garbine|Muguruza|ESP|R|19931008|182
Karolina|Pliskova|CZE|R|19920321|186
Petra|Kvitova|CZE|L|19900308|182
Maria|Sharapova|RUS|R|19870419|188
Victoria|Azarenka|BLR|R|19890731|180
Caroline|Wozniacki|DEN|R|19900711|177
Svetlana|Kuznetsova|RUS|R|19850627|174
Dominika|Cibulkova|SVK|R|19890506|161
Madison|Keys|USA|R|19950217|178
Johanna|Konta|GBR|R|19910517|180
Elina|Svitolina|UKR|R|19940912|174
Carla|Suarez Navarro|ESP|R|19880903|162
Timea|Bacsinszky|SUI|R|19890608|172
Roberta|Vinci|ITA|R|19830218|163
Flavia|Pennetta|ITA|R|19810225|172
Sara|Errani|ITA|R|19870429|164
Ana|Ivanovic|SRB|R|19881106|184
Jelena|Jankovic|SRB|R|19850228|177
Eugenie|Bouchard|CAN|R|19940225|178
Lucie|Safarova|CZE|L|19870204|177
Ekaterina|Makarova|RUS|L|19880607|180
Sabine|Lisicki|GER|R|19890922|178
Andrea|Petkovic|GER|R|19870909|180
Sloane|Stephens|USA|R|19930320|170
Na|Li|CHN|R|19820226|172
Samantha|Stosur|AUS|R|19840330|172
Marion|Bartoli|FRA|R|19841002|170
Caroline|Garcia|FRA|R|19931016|177
Kristina|Mladenovic|FRA|R|19930514|184
Alize|Cornet|FRA|R|19900122|173
Anastasia|Pavlyuchenkova|RUS|R|19910703|176
Elena|Vesnina|RUS|R|19860801|176
Daria|Kasatkina|RUS|R|19970507|170
Barbora|Strycova|CZE|R|19860328|164
Kiki|Bertens|NED|R|19911210|182
Coco|Vandeweghe|USA|R|19911206|185
Jelena|Ostapenko|LAT|R|19970608|177
Mirjana|Lucic Baroni|CRO|R|19820309|181
Monica|Puig|PUR|R|19930927|170
Shuai|Zhang|CHN|R|19890121|177
Shuai|Peng|CHN|R|19860108|172
Yaroslava|Shvedova|KAZ|R|19870912|180
Misaki|Doi|JPN|L|19910429|159
Kurumi|Nara|JPN|R|19911230|155
Laura|Siegemund|GER|R|19880304|168
Julia|Goerges|GER|R|19881102|180
Belinda|Bencic|SUI|R|19970310|175
Camila|Giorgi|ITA|R|19911230|168
Tsvetana|Pironkova|BUL|R|19870913|180
Lesia|Tsurenko|UKR|R|19890530|174
Anastasija|Sevastova|LAT|R|19900413|168
Yulia|Putintseva|KAZ|R|19950107|163
Carina|Witthoeft|GER|R|19950216|
Madison|Brengle|USA|R|19900403|165
Alison|Riske|USA|R|19900703|175
Christina|McHale|USA|R|19920511|170
Varvara|Lepchenko|USA|L|19860521|180
Shelby|Rogers|USA|R|19921013|170
Lauren|Davis|USA|R|19931009|157
Heather|Watson|GBR|R|19920519|170
Sorana|Cirstea|ROU|R|19900407|176
Irina Camelia|Begu|ROU|R|19900826|180
Monica|Niculescu|ROU|R|19870925|168
Daria|Gavrilova|AUS|R|19940305|163
Ajla|Tomljanovic|CRO|R|19930507|180
Donna|Vekic|CRO|R|19960628|179
Annika|Beck|GER|L|19940216|168
Mona|Barthel|GER|R|19900711|185
Tatjana|Maria|GER|R|19870808|173
Kateryna|Bondarenko|UKR|R|19860808|175
Pauline|Parmentier|FRA|R|19860131|177
Oceane|Dodin|FRA|R|19961024|183
Naomi|Osaka|JPN|R|19971016|180
Ana|Konjuh|CRO|R|19971227|
Lucie|Hradecka|CZE|R|19850521|183
Klara|Koukalova|CZE|R|19820224|173
Karin|Knapp|ITA|R|19870628|180
Francesca|Schiavone|ITA|R|19800623|166
Polona|Hercog|SLO|R|19910120|181
Johanna|Larsson|SWE|R|19880817|176
Magdalena|Rybarikova|SVK|R|19881004|180
Anna Karolina|Schmiedlova|SVK|R|19940913|173
Kaia|Kanepi|EST|R|19850610|181
Anett|Kontaveit|EST|R|19951224|174
Aliaksandra|Sasnovich|BLR|R|19940324|
Olga|Govortsova|BLR|R|19880823|179
Casey|Dellacqua|AUS|L|19850211|168
Jarmila|Wolfe|AUS|R|19870415|
Ashleigh|Barty|AUS|R|19960424|166
Zarina|Diyas|KAZ|R|19931018|170
Vania|King|USA|R|19890203|165
Bethanie|Mattek Sands|USA|R|19850323|168
Nicole|Gibbs|USA|R|19930303|168
Taylor|Townsend|USA|L|19960416|170
Kirsten|Flipkens|BEL|R|19860110|165
Yanina|Wickmayer|BEL|R|19891020|182
Alison|Van Uytvanck|BEL|R|19940326|173
Elise|Mertens|BEL|R|19951117|
Denisa|Allertova|CZE|R|19930107|
Katerina|Siniakova|CZE|R|19960510|174
Louisa|Chirico|USA|R|19960516|
Danka|Kovinic|MNE|R|19941118|
Margarita|Gasparyan|RUS|R|19940425|
Evgeniya|Rodina|RUS|R|19890204|
Vera|Zvonareva|RUS|R|19840907|172
Maria|Kirilenko|RUS|R|19870125|174
Nadia|Petrova|RUS|R|19820608|178
Jie|Zheng|CHN|R|19830705|164
Saisai|Zheng|CHN|R|19940205|
Qiang|Wang|CHN|R|19920114|172
Su Wei|Hsieh|TPE|R|19860104|168
Kimiko|Date Krumm|JPN|R|19700928|163
Ayumi|Morita|JPN|R|19900311|163
Andrea|Hlavackova|CZE|R|19860110|176
Romina|Oprandi|SUI|R|19860302|
Stefanie|Voegele|SUI|R|19900310|
Virginie|Razzano|FRA|R|19830512|170
Lara|Arruabarrena|ESP|R|19920320|
Anabel|Medina Garrigues|ESP|R|19820731|169
Teliana|Pereira|BRA|R|19880720|
Aleksandra|Wozniak|CAN|R|19870907|173
Kristyna|Pliskova|CZE|L|19920321|186
Elena|Baltacha|GBR|L|19830814|
Laura|Robson|GBR|L|19940121|
Sofia|Arvidsson|SWE|R|19840216|
Hsieh|Su Wei|TPE|U|19860104|"""

FIRST = ("Anna Maria Elena Olga Irina Natalia Ekaterina Alexandra Daria Sofia Julia Laura Sara Marta Lucia Paula "
         "Eva Petra Tereza Barbora Katarina Ivana Jana Lenka Andrea Nina Mia Emma Chloe Lea Camille Manon Alice "
         "Giulia Martina Chiara Francesca Valentina Ana Carmen Isabel Marina Aleksandra Karolina Magdalena Agata "
         "Kristina Yuliya Tamara Diana Victoria Jessica Ashley Emily Sarah Hannah Megan Lauren Kayla Amanda Nicole "
         "Yuki Mari Ayaka Risa Eri Misa Nao Xinyu Ying Lu Yan Jing Mei Hao Min Seo Ji Hye Priya Ankita Rutuja "
         "Fatma Ipek Cagla Melis Lina Noor Sabina Aiko Beatriz Gabriela Carolina Fernanda Luisa Camila Valeria").split()
LAST = ("Novak Horvat Kovac Petrova Ivanova Smirnova Popova Kuznetsova Sokolova Lebedeva Kozlova Novikova Morozova "
        "Volkova Pavlova Semenova Garcia Martinez Lopez Sanchez Perez Gomez Fernandez Diaz Moreno Romero Rossi Russo "
        "Ferrari Esposito Bianchi Romano Colombo Ricci Marino Greco Muller Schmidt Schneider Fischer Weber Meyer "
        "Wagner Becker Schulz Hoffmann Dubois Martin Bernard Thomas Petit Robert Richard Durand Leroy Moreau Simon "
        "Laurent Lefebvre Michel Smith Johnson Brown Jones Miller Davis Wilson Anderson Taylor Moore Jackson White "
        "Harris Clark Lewis Walker Hall Allen Young King Wright Scott Green Baker Adams Nelson Hill Campbell "
        "Nowak Kowalska Wisniewska Wojcik Kaminska Lewandowska Zielinska Szymanska Dvorakova Svobodova Novotna "
        "Cerna Prochazkova Kucerova Vesela Tanaka Suzuki Takahashi Watanabe Ito Yamamoto Nakamura Kobayashi Kato "
        "Wang Li Zhang Liu Chen Yang Huang Zhao Wu Zhou Xu Sun Ma Zhu Hu Guo Lin Kim Lee Park Choi Jung Kang Cho "
        "Yilmaz Kaya Demir Sahin Celik Yildiz Santos Oliveira Souza Lima Pereira Costa Rodrigues Almeida Nagy "
        "Toth Szabo Horvath Varga Kiss Molnar Popescu Ionescu Stan Dumitru Georgescu Papadopoulou Jansen "
        "DeVries VanDijk Bakker Visser Smit Peeters Janssens Maes Jacobs Mertens Willems").split()
COUNTRIES = ["USA"] * 14 + ["RUS"] * 8 + ["FRA"] * 6 + ["GER"] * 6 + ["ITA"] * 5 + ["ESP"] * 5 + ["CZE"] * 5 + \
    ["JPN"] * 5 + ["CHN"] * 5 + ["AUS"] * 5 + ["GBR"] * 4 + ["UKR"] * 3 + ["ROU"] * 3 + ["POL"] * 3 + ["NED"] * 3 + \
    ["BEL"] * 2 + ["SVK"] * 2 + ["CAN"] * 3 + ["ARG"] * 3 + ["BRA"] * 3 + ["KOR"] * 2 + ["IND"] * 2 + ["SWE"] * 2 + \
    ["HUN"] * 2 + ["SRB"] * 2 + ["CRO"] * 2 + ["TUR"] * 2 + ["BLR"] * 2 + ["KAZ"] * 2 + ["AUT"] * 2 + ["SUI"] * 2 + \
    ["GRE", "POR", "MEX", "COL", "CHI", "VEN", "THA", "TPE", "INA", "ISR", "RSA", "NZL", "FIN", "NOR", "DEN",
     "EST", "LAT", "LTU", "SLO", "BUL", "GEO", "ARM", "UZB", "PUR", "PER", "ECU", "PAR", "URU", "EGY", "TUN",
     "MAR", "NGR", "ZIM", "IRL", "LUX", "MON", "CYP", "MLT", "BIH", "MNE", "MKD", "ALB", "ISL", "PHI", "VIE",
     "MAS", "SIN", "HKG", "IRI", "PAK", "SRI", "QAT", "KUW", "DOM", "CRC", "GUA", "BAH", "BAR", "JAM", "TRI",
     "BOL", "ESA", "HON", "NCA", "PAN", "AND", "LIE", "SMR", "MDA", "AZE", "KGZ", "TJK", "TKM", "MGL", "NEP"]

TOURNEYS = [  # name, level, surface, draw, month, day
    ("Brisbane", "P", "Hard", 32, 1, 1), ("Sydney", "P", "Hard", 32, 1, 8),
    ("Australian Open", "G", "Hard", 128, 1, 15), ("Doha", "P", "Hard", 32, 2, 12),
    ("Dubai", "P", "Hard", 32, 2, 19), ("Indian Wells", "PM", "Hard", 96, 3, 7),
    ("Miami", "PM", "Hard", 96, 3, 21), ("Charleston", "P", "Clay", 32, 4, 2),
    ("Stuttgart", "P", "Clay", 32, 4, 23), ("Madrid", "PM", "Clay", 64, 5, 1),
    ("Rome", "P", "Clay", 64, 5, 14), ("Roland Garros", "G", "Clay", 128, 5, 26),
    ("Eastbourne", "P", "Grass", 32, 6, 18), ("Wimbledon", "G", "Grass", 128, 6, 25),
    ("Toronto", "P", "Hard", 64, 8, 6), ("Cincinnati", "P", "Hard", 64, 8, 13),
    ("US Open", "G", "Hard", 128, 8, 27), ("Wuhan", "P", "Hard", 64, 9, 24),
    ("Beijing", "PM", "Hard", 64, 10, 1), ("Hobart", "I", "Hard", 32, 1, 8),
    ("Acapulco", "I", "Hard", 32, 2, 26), ("Bogota", "I", "Clay", 32, 4, 9),
    ("Nottingham", "I", "Grass", 32, 6, 4), ("Washington", "I", "Hard", 32, 7, 30),
    ("WTA Championships", "F", "Hard", 8, 10, 21),
]
TID = {n: 700 + i * 7 for i, (n, *_r) in enumerate(TOURNEYS)}
TID["Australian Open"], TID["Roland Garros"], TID["Wimbledon"], TID["US Open"] = 580, 520, 540, 560
TID["WTA Championships"] = 808
YEARS = [2013, 2014, 2015, 2016, 2017]


def ymd(d):
    return d.year * 10000 + d.month * 100 + d.day


def age_at(birth, day):
    if birth is None:
        return None
    b = dt.date(birth // 10000, birth // 100 % 100, birth % 100)
    return round((day - b).days / 365.25, 2)


def build():
    if os.path.exists(P):
        os.remove(P)
    c = sqlite3.connect(P)
    cols = """"best_of" INT,
"draw_size" INT,
"loser_age" FLOAT,
"loser_entry" TEXT,
"loser_hand" TEXT,
"loser_ht" INT,
"loser_id" INT,
"loser_ioc" TEXT,
"loser_name" TEXT,
"loser_rank" INT,
"loser_rank_points" INT,
"loser_seed" INT,
"match_num" INT,
"minutes" INT,
"round" TEXT,
"score" TEXT,
"surface" TEXT,
"tourney_date" DATE,
"tourney_id" TEXT,
"tourney_level" TEXT,
"tourney_name" TEXT,
"winner_age" FLOAT,
"winner_entry" TEXT,
"winner_hand" TEXT,
"winner_ht" INT,
"winner_id" INT,
"winner_ioc" TEXT,
"winner_name" TEXT,
"winner_rank" INT,
"winner_rank_points" INT,
"winner_seed" INT,
"year" INT"""
    c.executescript(f"""
CREATE TABLE players(
"player_id" INT PRIMARY KEY,
"first_name" TEXT,
"last_name" TEXT,
"hand" TEXT,
"birth_date" DATE,
"country_code" TEXT
);
CREATE TABLE matches(
{cols},
FOREIGN KEY(loser_id) REFERENCES players(player_id),
FOREIGN KEY(winner_id) REFERENCES players(player_id)
);
CREATE TABLE qualifying_matches(
{cols},
FOREIGN KEY(loser_id) REFERENCES players(player_id),
FOREIGN KEY(winner_id) REFERENCES players(player_id)
);
CREATE TABLE rankings(
"ranking_date" DATE,
"ranking" INT,
"player_id" INT,
"ranking_points" INT,
"tours" INT,
FOREIGN KEY(player_id) REFERENCES players(player_id)
);
""")
    # ---- players: ~20,000; ids from 200001; real ones scattered in the 200xxx-202xxx range
    players = {}
    n_total = 20400
    real = [ln.split("|") for ln in REAL.strip().splitlines()]
    real_ids = sorted(rng.sample(range(200400, 213000), len(real)))
    rng.shuffle(real_ids)
    height = {}
    strength = {}
    for (fn, ln, cc, hand, bd, ht), pid in zip(real, real_ids):
        players[pid] = [pid, fn, ln, hand, int(bd), cc]
        height[pid] = int(ht) if ht else None
    # strength of the real ones ~ their list position (top of the list = strongest)
    for i, pid in enumerate(real_ids):
        strength[pid] = 100 - i * 0.6 + rng.gauss(0, 3)
    pid = 200001
    while len(players) < n_total:
        if pid not in players:
            fn, ln = rng.choice(FIRST), rng.choice(LAST)
            r = rng.random()
            # obscure players: hand mostly 'U', many without birth dates (Spider quirk)
            hand = "U" if r < 0.72 else ("R" if r < 0.96 else "L")
            if pid < 206000:  # the old ITF-era players
                bd = None if rng.random() < 0.55 else ymd(dt.date(1950, 1, 1) + dt.timedelta(days=rng.randint(0, 12000)))
            else:
                bd = None if rng.random() < 0.35 else ymd(dt.date(1975, 1, 1) + dt.timedelta(days=rng.randint(0, 10500)))
            cc = rng.choice(COUNTRIES)
            if rng.random() < 0.004:
                cc = "UNK"
            players[pid] = [pid, fn, ln, hand, bd, cc]
        pid += 1
    c.executemany("INSERT INTO players VALUES (?,?,?,?,?,?)", sorted(players.values()))
    # a mid-tier pool of obscure-but-active players (they fill rankings / lower draws)
    obscure = [p for p in players if p not in strength and p > 208000]
    pool = rng.sample(obscure, 900)
    for p in pool:
        strength[p] = rng.uniform(5, 45)
        players[p][3] = "R" if rng.random() < 0.88 else "L"
        if players[p][4] is None and rng.random() < 0.7:
            players[p][4] = ymd(dt.date(1985, 1, 1) + dt.timedelta(days=rng.randint(0, 4700)))
        c.execute("UPDATE players SET hand=?, birth_date=? WHERE player_id=?", (players[p][3], players[p][4], p))
    active = list(strength)

    def name(p):
        return f"{players[p][1]} {players[p][2]}"

    # ---- rankings: weekly, 2010-01-04 .. 2017-12-25, ~720 ranked a week (≈300k rows)
    ranks = {}  # date -> {pid: (rank, points)}
    week = dt.date(2010, 1, 4)
    drift = {p: 0.0 for p in active}
    rk_rows = []
    while week <= dt.date(2017, 12, 25):
        for p in active:
            drift[p] = 0.97 * drift[p] + rng.gauss(0, 1.2)
        def cur(p):
            bd = players[p][4]
            a = age_at(bd, week) if bd else 26
            peak = -0.25 * (a - 27) ** 2 if a else 0
            return strength[p] + drift[p] + peak * 0.3
        n_week = 700 + rng.randint(0, 40)
        order = sorted(active, key=cur, reverse=True)[:n_week]
        d = {}
        for i, p in enumerate(order, 1):
            pts = int(11000 * i ** -0.85) + rng.randint(0, 15)
            tours = rng.randint(8, 30) if rng.random() > 0.03 else None
            d[p] = (i, pts)
            rk_rows.append((ymd(week), i, p, pts, tours))
        ranks[week] = d
        week += dt.timedelta(days=7)
    c.executemany("INSERT INTO rankings VALUES (?,?,?,?,?)", rk_rows)

    def week_of(day):
        w = dt.date(2010, 1, 4) + dt.timedelta(days=7 * ((day - dt.date(2010, 1, 4)).days // 7))
        return ranks[w]

    def score_for(best_of=3):
        n = 2 if rng.random() < 0.65 else 3
        lost = rng.randint(0, 1) if n == 3 else -1
        sets = []
        for s in range(n):
            a, b = rng.choice([(6, 0), (6, 1), (6, 2), (6, 3), (6, 4), (7, 5), (7, 6)])
            if s == lost:
                a, b = b, a
            txt = f"{a}-{b}"
            if {a, b} == {6, 7}:
                txt += f"({rng.randint(1, 9)})"
            sets.append(txt)
        if rng.random() < 0.015:
            sets.append("RET")
        return " ".join(sets)

    def mrow(tname, lvl, surf, draw, tdate, year, rnd, num, w, lo, wrk, lrk, wseed, lseed, went, lent):
        wr = wrk.get(w, (None, None))
        lr = lrk.get(lo, (None, None))
        sc = score_for()
        nsets = len(sc.split())
        mins = None if rng.random() < 0.18 else int(rng.gauss(48 * nsets + 10, 18))
        return (3, draw, age_at(players[lo][4], tdate), lent, players[lo][3], height.get(lo), lo, players[lo][5], name(lo),
                lr[0], lr[1], lseed, num, mins, rnd, sc, surf, ymd(tdate), f"{year}-{TID[tname]}", lvl, tname,
                age_at(players[w][4], tdate), went, players[w][3], height.get(w), w, players[w][5], name(w),
                wr[0], wr[1], wseed, year)

    rows, qrows = [], []
    for year in YEARS:
        for tname, lvl, surf, draw, mon, day in TOURNEYS:
            if lvl == "I" and rng.random() < 0.3:
                continue
            tdate = dt.date(year, mon, day)
            while tdate.weekday() != 0:
                tdate += dt.timedelta(days=1)
            rk = week_of(tdate)
            ranked = sorted(rk, key=lambda p: rk[p][0])
            if tname == "WTA Championships":
                field = ranked[:8]
            else:
                skip = set(rng.sample(ranked[:40], 6 if lvl == "G" else rng.randint(8, 20)))
                main = [p for p in ranked if p not in skip][: draw - 4 - (2 if lvl != "G" else 0)]
                quals = [p for p in ranked[150:400] if p not in main]
                q = rng.sample(quals, 4)
                wc = rng.sample([p for p in ranked[100:700] if p not in main and p not in q], draw - len(main) - 4)
                field = main + q + wc
            entry = {p: None for p in field}
            if tname != "WTA Championships":
                for p in q:
                    entry[p] = "Q"
                for p in wc:
                    entry[p] = "WC" if rng.random() < 0.6 else "LL"
                # qualifying matches: qualifiers beat someone lower
                for p in q:
                    opp = rng.choice(ranked[200:700])
                    if opp in field:
                        continue
                    qrows.append(mrow(tname, lvl, surf, 32, tdate, year, "Q1", len(qrows) + 1, p, opp, rk, rk,
                                      None, None, None, None))
            nseed = {128: 32, 96: 32, 64: 16, 32: 8, 8: 8}[draw]
            seeds = {p: i + 1 for i, p in enumerate(sorted(field, key=lambda p: rk.get(p, (9999,))[0])[:nseed])}

            def play(a, b):
                sa, sb = strength[a], strength[b]
                pa = 1 / (1 + 10 ** ((sb - sa) / 25))
                return (a, b) if rng.random() < pa else (b, a)

            num = 1
            if tname == "WTA Championships":
                grp = [field[0::2], field[1::2]]
                semis = []
                for g in grp:
                    wins = {p: 0 for p in g}
                    for i in range(4):
                        for j in range(i + 1, 4):
                            w, lo = play(g[i], g[j])
                            wins[w] += 1
                            rows.append(mrow(tname, lvl, surf, draw, tdate, year, "RR", num, w, lo, rk, rk,
                                             seeds.get(w), seeds.get(lo), None, None))
                            num += 1
                    semis += sorted(g, key=lambda p: -wins[p])[:2]
                alive = [semis[0], semis[3], semis[2], semis[1]]
                rounds = ["SF", "F"]
            else:
                rng.shuffle(field)
                alive = field
                rounds = {128: ["R128", "R64", "R32", "R16", "QF", "SF", "F"],
                          96: ["R128", "R64", "R32", "R16", "QF", "SF", "F"],
                          64: ["R64", "R32", "R16", "QF", "SF", "F"],
                          32: ["R32", "R16", "QF", "SF", "F"]}[draw]
                if draw == 96:  # top 32 get byes in the first round
                    alive = field[:64]
                    byes = field[64:]
            for rnd in rounds:
                nxt = []
                for i in range(0, len(alive), 2):
                    w, lo = play(alive[i], alive[i + 1])
                    rows.append(mrow(tname, lvl, surf, draw, tdate, year, rnd, num, w, lo, rk, rk,
                                     seeds.get(w), seeds.get(lo), entry.get(w), entry.get(lo)))
                    num += 1
                    nxt.append(w)
                alive = nxt
                if draw == 96 and rnd == "R128":
                    alive = nxt + byes
                    rng.shuffle(alive)
    c.executemany(f"INSERT INTO matches VALUES ({','.join('?' * 32)})", rows)
    c.executemany(f"INSERT INTO qualifying_matches VALUES ({','.join('?' * 32)})", qrows)
    c.commit()
    print("players", len(players), "rankings", len(rk_rows), "matches", len(rows), "qualifying", len(qrows))
    c.close()


if __name__ == "__main__":
    build()
