"""The words of :mod:`.forget_request`, one table per language (regular expressions as text; data only).

Each table: ``asks`` (kind, pattern): the clause's start up to the verb, groups ``v`` (the verb) and ``obj``
(what follows it, or for verb-final languages what precedes it); kinds ``forget`` (forget), ``erase`` (delete,
remove...), ``keep`` (a negated keep: don't keep / store / remember), ``backkeep`` (the same with the object a
pronoun inside the verb: "ne le garde pas") and ``gone`` ("I want that deleted"). ``polite``: politeness at the
object's edges. ``cue``: "from (your) memory". ``back``: what was just said ("that"); ``back_told``: the same
said with "said" ("what I just said"). ``told``: "what I told you about X" (group ``about``). ``data``: the
user's own data, whole ("my old address"); ``own``: its possessive. ``bulk``: everything about the user.
``idiom``: an object that makes "forget" an idiom ("it"); ``topic``: after "forget that,", a change of topic.
``that``: "that I have diabetes" (group ``x``).
"""

from __future__ import annotations

#: Clause openers and fillers before the verb, per language.
_LEAD = {
    "en": (r"(?:(?:ok(?:ay)?|so|and|also|actually|oh|hey|wait|hm+|well|now|then|but|sorry|oops|um+|uh+|ah+|right|"
           r"one more thing|on second thought|by the way|btw|last thing|lastly|finally|no|yes|yeah|ps|hi|hello)"
           r"\s*[,.!:;-]*\s+)*"),
    "de": (r"(?:(?:ok(?:ay)?|also|und|ach|übrigens|eigentlich|doch|jetzt|ähm|äh|nein|ja|sorry|oh|hey|hallo|moment|"
           r"warte|noch etwas|noch was)\s*[,.!:;-]*\s+)*"),
    "fr": (r"(?:(?:ok(?:ay)?|alors|et|aussi|en fait|oh|bon|euh|d'accord|tiens|au fait|non|oui|désolée?|pardon|enfin|"
           r"finalement)\s*[,.!:;-]*\s+)*"),
    "es": (r"(?:(?:ok(?:ay)?|vale|bueno|y|también|oye|oh|ah|mira|en realidad|de hecho|por cierto|no|sí|perdón|perdona|"
           r"pensándolo bien)\s*[,.!:;-]*\s+)*"),
    "it": (r"(?:(?:ok(?:ay)?|allora|e|anche|ah|oh|senti|comunque|in realtà|a proposito|no|sì|scusa|anzi)"
           r"\s*[,.!:;-]*\s+)*"),
    "pt": (r"(?:(?:ok(?:ay)?|então|e|também|ah|oh|olha|na verdade|aliás|não|sim|desculpa|pensando bem)"
           r"\s*[,.!:;-]*\s+)*"),
    "zh": r"(?:(?:好的?|嗯|哦|对了|其实|另外|还有|那个|啊|诶|哎|算了吧)[，,。!！\s]*)*",
    "ja": r"(?:(?:あ|えっと|ちなみに|そういえば|やっぱり|やっぱ|ところで|あと)[、,\s]*)*",
}

_EN_ASKER = (r"(?:(?:can|could|would|will)\s+(?:you|u)\s+(?:please\s+|kindly\s+|just\s+|now\s+)*|"
             r"(?:i\s+(?:want|need|would like|wish|'d like|am asking|'m asking)|i'd\s+like)\s+you\s+to\s+(?:please\s+)?|"
             r"you\s+(?:can|may|should|must|need to|have to)\s+(?:now\s+|just\s+|please\s+)*|"
             r"(?:please\s+)?make\s+sure\s+(?:you|to)\s+|i'?d\s+(?:appreciate it|be grateful)\s+if\s+you\s+"
             r"(?:would\s+|could\s+)?)?")
_EN_POLITE = r"(?:(?:please|pls|plz|kindly|just|also|now|then|actually|simply|go ahead and)\s+)*"
_EN_KEEP = (r"(?P<v>keep|keeping|store|storing|save|saving|remember|remembering|retain|retaining|record|recording|"
            r"memori[sz]e|memori[sz]ing|hold on to|holding on to|note down|write down|hang on to)")
_EN_DATA = (r"social security (?:number|no\.?)|social security|social insurance number|national insurance number|ssn|"
            r"tax (?:id|number|file number)|(?:home|work|mailing|email|e-mail|ip|postal|street) address|address(?:es)?|"
            r"(?:phone|telephone|cell(?:phone)?|mobile|home phone|work phone) numbers?|phone|cell|mobile|number|e-?mail|"
            r"birthday|birth ?date|date of birth|dob|age|salary|income|pay|wages?|bonus|net worth|passwords?|passcode|"
            r"passphrase|pin(?: code| number)?|bank (?:account(?: number)?|details|info(?:rmation)?)|account numbers?|"
            r"iban|routing number|(?:credit|debit) card(?: number| details)?|card (?:number|details)|cvv|"
            r"passport(?: number)?|id number|national id|driver'?s licen[cs]e(?: number)?|licen[cs]e plate|"
            r"(?:health|medical) (?:info(?:rmation)?|data|conditions?|issues?|problems?|history|records?)|"
            r"diagnos(?:is|es)|medications?|meds|prescriptions?|illness|disease|allerg(?:y|ies)|weight|location|"
            r"whereabouts|last name|surname|maiden name|full name|real name|legal name|name|religion|pronouns|"
            r"sexual orientation|therapist|therapy|debts?|credit score|criminal record|employer|workplace|"
            r"relationship status|pregnancy|due date|blood type|political views|home town|hometown")
_EN_REL = (r"wife|husband|partner|spouse|girlfriend|boyfriend|ex|daughter|son|kids?|children|child|mom|mother|mum|"
           r"dad|father|sister|brother|grandma|grandmother|grandpa|grandfather|aunt|uncle|cousin|niece|nephew|"
           r"baby|parents|family|fianc[ée]e?|dog|cat|pet|friend|best friend|boss|doctor|landlord|neighbou?r")
_EN_MOD = r"(?:(?:old|current|new|previous|former|exact|real|full|personal|private|actual|own|home|present)\s+)*"

EN = {
    "asks": [
        ("forget", _LEAD["en"] + _EN_ASKER + _EN_POLITE + r"(?P<v>forget)\b\s*,?\s*(?P<obj>.*)"),
        ("erase", _LEAD["en"] + _EN_ASKER + _EN_POLITE + r"(?P<v>delete|remove|erase|wipe(?: out)?|purge|drop|clear|"
                  r"discard|scrub|unlearn|get rid of|throw away|scratch|strike)\b\s*(?P<obj>.*)"),
        ("keep", _LEAD["en"] + _EN_POLITE + r"(?:(?:please\s+)?(?:don'?t|do not|dont|never|stop|quit|no need to|"
                 r"there'?s no need to)\s+(?:ever\s+|please\s+)?|i\s+(?:don'?t|do not)\s+want\s+you\s+to\s+(?:ever\s+)?|"
                 r"i'?d\s+(?:rather|prefer)\s+(?:that\s+)?you\s+(?:didn'?t|don'?t|did not|not)\s+|(?:you\s+)?(?:shouldn'?t|"
                 r"should not|must not|mustn'?t|don'?t need to|do not need to)\s+)" + _EN_KEEP + r"\b\s*(?P<obj>.*)"),
        ("gone", _LEAD["en"] + r"i\s+(?:want|need|'d like|would like)\s+(?P<obj>.+?)\s+(?:to be\s+)?(?P<v>forgotten|"
                 r"deleted|removed|erased|gone|wiped)\b(?:\s+from (?:your |the )?memory)?\s*[.!]*\s*$"),
    ],
    "polite": (r"(?:^(?:please|pls|kindly|just|also|now)\s+|\s+(?:please|pls|too|as well|for me|for good|now|then|"
               r"again|entirely|completely|permanently|forever|right away|immediately|thanks|thank you|ok(?:ay)?|"
               r"altogether|at all|anymore|any more|anywhere|asap|either|thx|ty)$)"),
    "cue": (r"\s*(?:(?:from|out of|in)\s+(?:your|the|plur'?s?|my|long[- ]term)?\s*(?:long[- ]term\s+)?"
            r"(?:memory|memories|notes)|from plur|in plur)\b"),
    "back": (r"(?:that|this|all (?:of )?(?:that|this)|those|these|that one|that last (?:part|bit|message|one|sentence|"
             r"thing|line)|(?:that|the) (?:last|previous) (?:part|bit|message|sentence|thing|line))"),
    "back_told": (r"(?:what i (?:just |have just |'ve just )?(?:said|told you|wrote|typed|mentioned|shared)"
                  r"(?: (?:earlier|before|just now|a moment ago|there|above|here))?|my (?:last|previous) (?:message|"
                  r"sentence|comment|reply|note|line|prompt)|the last (?:thing|part|bit|message|sentence|line) i "
                  r"(?:said|wrote|typed|told you)|everything i just (?:said|told you|wrote))"),
    "told": [
        (r"(?:what|everything|anything|all|the (?:things?|stuff|bits?|parts?|details?|info(?:rmation)?)|stuff|"
         r"whatever)(?: that)? i(?:'ve| have)? (?:just |ever |earlier |previously |already )?(?:told|said to|"
         r"mentioned to|shared with|gave|wrote to|said|mentioned|shared|wrote|typed|disclosed to|revealed to)"
         r"(?: you| to you)?(?: (?:earlier|before|today|yesterday|just now|previously))?"
         r"(?: (?:about|regarding|concerning|on|of|re:?)\s+(?P<about>.+))?"),
        (r"(?:what|everything|anything|all|whatever)(?: that)? you (?:know|remember|have|'ve got|stored|saved|"
         r"learned|learnt|kept|recorded|noted)(?: (?:stored|saved|down|noted))?\s+(?:about|regarding|concerning|on|"
         r"of)\s+(?P<about>.+)"),
        (r"(?:the|any|all|all the|every|each|that|those|these)\s+(?:notes?|memor(?:y|ies)|engrams?|entr(?:y|ies)|"
         r"facts?|info(?:rmation)?|details?|data|records?)(?: (?:you have|you've got|you keep|you stored|you saved|"
         r"you hold|in memory|stored|saved|you made))?\s+(?:about|on|regarding|concerning|of|for|mentioning|"
         r"that mentions?|with|that says?)\s+(?P<about>.+)"),
        r"(?:everything|anything|all)\s+(?:about|regarding|concerning)\s+(?P<about>.+)",
        r"about\s+(?P<about>(?:my|our)\s.+)",
    ],
    "data": (r"(?:my|our)\s+" + _EN_MOD + r"(?:(?:" + _EN_REL + r")(?:'s|s'|s)?\s+" + _EN_MOD + r")?(?:" + _EN_DATA +
             r")(?:\s+(?:number|details|info(?:rmation)?|data))?|(?:my|our)\s+(?:" + _EN_REL +
             r")(?:'s|s')\s+\w+(?:\s\w+)?|(?:where|when|how old|how much|who|which \w+)\s+(?:i|i'm|my)\b.*"),
    "own": r"^(?:my|our|the user'?s)\s+",
    "bulk": (r"(?:me|myself|us|everything|all|anything|whatever|all my data|all of it|everything you know|"
             r"everything you have|everything you remember|all (?:my|of my) (?:data|info(?:rmation)?|notes|memories))"),
    "idiom": r"^(?:it\b|about (?:it|that|this)\b|it all\b|to\b|the whole thing\b|them\b)",
    "topic": (r"^(?:let'?s|let us|we'?ll|we will|we can|we should|moving on|move on|never ?mind|no matter|"
              r"(?:it )?doesn'?t matter|not important|for now|anyway|and|just|instead|i'?ll|focus|back to|go|use|try|"
              r"the (?:real|actual|main) (?:issue|problem|question|point)|what i (?:really )?(?:mean|meant|want))\b"),
    "that": r"that\s+(?P<x>(?:i|i'm|i've|i'd|i'll|my|me|we|our)\b.+)",
}

_DE_PRE = r"(?:(?:bitte|doch|einfach|jetzt|auch|mal)\s+)*"
_DE_DATA = (r"adresse|anschrift|wohnadresse|telefonnummer|handynummer|nummer|e-?mail(?:-adresse)?|geburtstag|"
            r"geburtsdatum|passwort|kennwort|pin|gehalt|einkommen|kontonummer|bankverbindung|iban|kreditkartennummer|"
            r"kreditkarte|sozialversicherungsnummer|steuernummer|steuer-id|ausweisnummer|passnummer|reisepassnummer|"
            r"diagnose|krankheit|medikamente|gesundheitsdaten|namen?|wohnort|alter|gewicht|arbeitgeber|religion")
DE = {
    "asks": [
        ("forget", _LEAD["de"] + _DE_PRE + r"(?P<v>vergiss|vergessen sie)\b\s*(?:bitte\s+|doch\s+|einfach\s+)*,?\s*"
                   r"(?P<obj>.*)"),
        ("forget", _LEAD["de"] + r"(?:kannst|könntest|würdest|können|könnten|würden)\s+(?:du|sie)\s+(?:bitte\s+|mal\s+)*"
                   r"(?P<obj>.+?)\s+(?P<v>vergessen)\s*[?.!]*$"),
        ("erase", _LEAD["de"] + r"(?:kannst|könntest|würdest|können|könnten|würden)\s+(?:du|sie)\s+(?:bitte\s+|mal\s+)*"
                  r"(?P<obj>.+?)\s+(?P<v>löschen|entfernen|streichen)\s*[?.!]*$"),
        ("erase", _LEAD["de"] + _DE_PRE + r"(?P<v>lösche|lösch|löschen sie|entferne|entfern|entfernen sie|streiche|"
                  r"streich)\b\s*(?:bitte\s+)*,?\s*(?P<obj>.*)"),
        ("keep", _LEAD["de"] + _DE_PRE + r"(?P<v>speichere|speicher|behalte|behalt|merk dir|merke dir|notiere|notier)"
                 r"\s+(?:bitte\s+|dir\s+)?(?P<obj>.+?)\s+(?:bitte\s+)?nicht\b\s*[.!]*$"),
        ("keep", _LEAD["de"] + r"ich\s+(?:will|möchte)\s+nicht,?\s+dass\s+du\s+(?:dir\s+)?(?P<obj>.+?)\s+(?:dir\s+)?"
                 r"(?P<v>speicherst|behältst|merkst|aufschreibst|notierst)\b\s*[.!]*$"),
        ("keep", _LEAD["de"] + r"(?P<obj>.+?)\s+bitte\s+nicht\s+(?P<v>speichern|merken|behalten|notieren)\s*[.!]*$"),
    ],
    "polite": (r"(?:^(?:bitte|doch|einfach|mal)\s+|\s+(?:bitte|auch|doch|mal|jetzt|sofort|komplett|ganz|endgültig|"
               r"für immer|danke|wieder)$)"),
    "cue": r"\s*(?:aus\s+(?:deinem|dem|deinen)\s+(?:gedächtnis|speicher|notizen|erinnerungen)|aus plur)\b",
    "back": r"(?:das|dies|dieses|diese|das eben|das gerade|das letzte)",
    "back_told": (r"(?:(?:das,? )?was ich (?:dir |ihnen )?(?:gerade |eben |vorhin |soeben )?(?:gesagt|geschrieben|"
                  r"erzählt|geschickt) habe|meine letzte nachricht|meine letzten nachrichten)"),
    "told": [
        (r"(?:was|alles,? was) ich (?:dir|ihnen) (?:über|zu|von) (?P<about>.+?) (?:erzählt|gesagt|geschrieben|"
         r"mitgeteilt|verraten) habe"),
        r"(?:alles|das),? was du (?:über|von) (?P<about>.+?) weißt",
        r"alles (?:über|zu) (?P<about>.+)",
        (r"(?:die|alle|jede) (?:notiz(?:en)?|erinnerung(?:en)?|einträge?|infos?|informationen|daten) (?:über|zu|von) "
         r"(?P<about>.+)"),
        r"alles,? was ich (?:dir )?(?:erzählt|gesagt) habe",
    ],
    "data": (r"(?:mein|meine|meinen|meiner|meines|meinem)\s+(?:(?:alte|alten|alter|aktuelle|aktuellen|neue|neuen|"
             r"private|privaten)\s+)?(?:" + _DE_DATA + r")|(?:wo|wann|wie alt) ich\b.*"),
    "own": r"^(?:mein|meine|meinen|meiner|meines|meinem)\s+",
    "bulk": r"(?:alles|mich|über mich|alles über mich|alle meine daten)",
    "idiom": r"^(?:es\b|das mal\b|nicht\b|den rest\b|zu\b)",
    "topic": r"^(?:lass uns|lasst uns|wir|machen wir|weiter|egal|nicht wichtig|vorerst|erstmal|und|ich)\b",
    "that": r"dass\s+(?P<x>ich\b.+)",
}

_FR_PRE = (r"(?:(?:s'il te pla[iî]t|s'il vous pla[iî]t|stp|svp|merci de|peux-tu|pouvez-vous|tu peux|vous pouvez|"
           r"pourrais-tu|pourriez-vous|je veux que tu|je voudrais que tu|j'aimerais que tu)\s*,?\s*)*")
_FR_KEEP = r"garde|gardez|retiens|retenez|enregistre|enregistrez|mémorise|mémorisez|conserve|conservez|stocke|stockez|note|notez|sauvegarde|sauvegardez"
FR = {
    "asks": [
        ("forget", _LEAD["fr"] + _FR_PRE + r"(?P<v>oublie|oubliez|oublier|oublies)\b\s*(?P<obj>.*)"),
        ("erase", _LEAD["fr"] + _FR_PRE + r"(?P<v>supprime|supprimez|supprimer|supprimes|efface|effacez|effacer|effaces|"
                  r"retire|retirez|retirer)\b\s*(?P<obj>.*)"),
        ("keep", _LEAD["fr"] + _FR_PRE + r"(?:ne\s+|n')(?P<v>" + _FR_KEEP + r")\s+pas\s+(?P<obj>.*)"),
        ("backkeep", _LEAD["fr"] + _FR_PRE + r"ne\s+(?:le|la|les|l')\s*(?P<v>" + _FR_KEEP + r")\s+pas\b\s*(?P<obj>.*)"),
        ("keep", _LEAD["fr"] + r"je ne veux pas que (?:tu|vous) (?P<v>gardes|gardiez|retiennes|reteniez|enregistres|"
                 r"enregistriez|mémorises|conserves|stockes|notes)\s+(?P<obj>.*)"),
        ("keep", _LEAD["fr"] + _FR_PRE + r"(?:de\s+)?ne pas (?P<v>garder|retenir|enregistrer|mémoriser|conserver|stocker|"
                 r"noter)\s+(?P<obj>.*)"),
    ],
    "polite": (r"(?:^(?:s'il te pla[iî]t|s'il vous pla[iî]t|stp|svp)\s*,?\s*|\s*,?\s+(?:s'il te pla[iî]t|"
               r"s'il vous pla[iî]t|stp|svp|aussi|maintenant|tout de suite|définitivement|complètement|pour de bon|"
               r"merci)$)"),
    "cue": r"\s*(?:de\s+(?:ta|votre|la)\s+mémoire|de\s+tes\s+notes|de\s+plur)\b",
    "back": r"(?:ça|cela|ceci|ce message|tout ça)",
    "back_told": (r"(?:ce que je (?:viens de |t'ai |vous ai )?(?:dire|dit|écrire|écrit)(?: tout à l'heure| à l'instant)?|"
                  r"mon dernier message|ma dernière phrase)"),
    "told": [
        (r"(?:ce|tout ce) que je (?:t'|vous )ai (?:dit|raconté|écrit|confié|appris) (?:sur|à propos de|au sujet de|"
         r"concernant|de) (?P<about>.+)"),
        r"tout ce que (?:tu sais|vous savez|tu as|tu retiens) (?:sur|de|à propos de) (?P<about>.+)",
        r"tout (?:sur|à propos de|concernant) (?P<about>.+)",
        (r"(?:la|les|toute?s? les?) (?:notes?|souvenirs?|informations?|infos?|données) (?:sur|à propos de|concernant|"
         r"de) (?P<about>.+)"),
        r"tout ce que je (?:t'|vous )ai (?:dit|raconté)",
    ],
    "data": (r"(?:mon|ma|mes)\s+(?:(?:ancienne?|vieille|actuelle?|nouvelle?)\s+)?(?:adresse(?: e-?mail| mail| postale)?|"
             r"numéro de téléphone|numéro de portable|numéro de sécurité sociale|sécurité sociale|téléphone|portable|"
             r"numéro|date de naissance|anniversaire|mot de passe|code pin|code secret|salaire|revenus?|e-?mail|"
             r"courriel|iban|rib|numéro de compte|carte bancaire|numéro de carte|passeport|numéro de passeport|"
             r"nom(?: de famille)?|âge|diagnostic|maladie|médicaments|traitement|poids|religion|employeur)|"
             r"(?:où|quand) (?:j'|je )\S.*"),
    "own": r"^(?:mon|ma|mes)\s+",
    "bulk": r"(?:tout|moi|tout sur moi|toutes mes données)",
    "idiom": r"^(?:-?le\b|-?la\b|-?les\b|pas\b|de\b|d')",
    "topic": r"^(?:on passe|passons|on continue|continuons|peu importe|laisse|allons|et|je|on)\b",
    "that": r"que\s+(?P<x>(?:je|j'|mon|ma|mes)\b.+)",
}

_ES_PRE = r"(?:(?:por favor|porfa|puedes|podrías|puede|podría|quiero que|necesito que)\s*,?\s*)*"
ES = {
    "asks": [
        ("forget", _LEAD["es"] + _ES_PRE + r"(?P<v>olvida|olvide|olvidá|olvidad|olvidar|olvides|olvídate de|"
                   r"olvidate de|olvídese de)\b\s*(?P<obj>.*)"),
        ("erase", _LEAD["es"] + _ES_PRE + r"(?P<v>borra|borre|borrá|borrar|borres|elimina|elimine|eliminá|eliminar|"
                  r"elimines|quita|quite|quitar|suprime|suprimir)\b\s*(?P<obj>.*)"),
        ("keep", _LEAD["es"] + _ES_PRE + r"no\s+(?P<v>guardes|guarde|guarden|recuerdes|recuerde|almacenes|almacene|"
                 r"registres|registre|memorices|memorice|conserves|conserve|apuntes|apunte|anotes)\s+(?P<obj>.*)"),
        ("backkeep", _LEAD["es"] + _ES_PRE + r"no\s+(?:lo|la|los|las)\s+(?P<v>guardes|guarde|recuerdes|recuerde|"
                     r"almacenes|registres|memorices|conserves|apuntes)\b\s*(?P<obj>.*)"),
        ("keep", _LEAD["es"] + r"no quiero que (?P<v>guardes|recuerdes|almacenes|conserves|registres|memorices)\s+"
                 r"(?P<obj>.*)"),
    ],
    "polite": (r"(?:^(?:por favor|porfa)\s*,?\s*|\s*,?\s+(?:por favor|porfa|también|ahora|ya|para siempre|gracias|"
               r"completamente|del todo)$)"),
    "cue": r"\s*(?:de\s+(?:tu|su|la)\s+memoria|de\s+tus\s+notas|de\s+plur)\b",
    "back": r"(?:eso|esto|aquello|ese mensaje|todo eso)",
    "back_told": (r"(?:lo que (?:te )?(?:acabo de (?:decir|escribir|contar)|dije|escribí|conté)(?: antes| hace un momento)?|"
                  r"mi último mensaje)"),
    "told": [
        (r"(?:lo|todo lo) que te (?:dije|conté|comenté|escribí|he dicho|he contado) (?:sobre|de|acerca de|respecto a) "
         r"(?P<about>.+)"),
        r"todo lo que (?:sabes|recuerdas|tienes) (?:sobre|de|acerca de) (?P<about>.+)",
        r"todo (?:sobre|acerca de) (?P<about>.+)",
        r"(?:la|las|toda la|todas las) (?:notas?|informaci[oó]n|datos|memorias?) (?:sobre|de|acerca de) (?P<about>.+)",
        r"todo lo que te (?:dije|conté|he dicho)",
    ],
    "data": (r"(?:mi|mis)\s+(?:(?:antigua|antiguo|vieja|viejo|actual|nueva|nuevo)\s+)?(?:dirección(?: de correo)?|"
             r"domicilio|número de teléfono|teléfono|celular|móvil|número de (?:la )?seguridad social|"
             r"número de seguro social|seguro social|fecha de nacimiento|cumpleaños|contraseña|clave|pin|salario|"
             r"sueldo|ingresos|correo(?: electrónico)?|e-?mail|dni|nie|pasaporte|número de pasaporte|número de cuenta|"
             r"cuenta bancaria|tarjeta de crédito|número de tarjeta|nombre|apellido|edad|diagnóstico|enfermedad|"
             r"medicamentos|medicación|peso|número|religión)|(?:dónde|donde|cuándo|cuando) (?:vivo|trabajo|nací)\b.*"),
    "own": r"^(?:mi|mis)\s+",
    "bulk": r"(?:todo|mí|todo sobre mí|todos mis datos)",
    "idiom": r"^(?:eso de\b|de que\b)",
    "topic": r"^(?:sigamos|pasemos|vamos|no importa|da igual|y|mejor|ahora|yo)\b",
    "that": r"que\s+(?P<x>(?:yo|mi|mis|soy|tengo|estoy|vivo|trabajo)\b.+)",
}

_IT_PRE = r"(?:(?:per favore|per piacere|puoi|potresti|può|potrebbe|voglio che tu|vorrei che tu)\s*,?\s*)*"
IT = {
    "asks": [
        ("forget", _LEAD["it"] + _IT_PRE + r"(?P<v>dimentica|dimentichi|dimenticate|dimenticare|scordati di|scordare)"
                   r"\b\s*(?P<obj>.*)"),
        ("erase", _LEAD["it"] + _IT_PRE + r"(?P<v>cancella|cancelli|cancellare|elimina|elimini|eliminare|rimuovi|"
                  r"rimuova|rimuovere)\b\s*(?P<obj>.*)"),
        ("keep", _LEAD["it"] + _IT_PRE + r"non\s+(?P<v>salvare|tenere|memorizzare|conservare|ricordare|registrare|"
                 r"annotare|segnare)\s+(?P<obj>.*)"),
        ("backkeep", _LEAD["it"] + _IT_PRE + r"non\s+(?P<v>salvarlo|salvarla|tenerlo|tenerla|memorizzarlo|memorizzarla|"
                     r"ricordarlo|ricordarla|registrarlo|conservarlo)\b\s*(?P<obj>.*)"),
        ("keep", _LEAD["it"] + r"non voglio che tu (?P<v>salvi|tenga|memorizzi|conservi|ricordi|registri)\s+"
                 r"(?P<obj>.*)"),
    ],
    "polite": (r"(?:^(?:per favore|per piacere)\s*,?\s*|\s*,?\s+(?:per favore|per piacere|anche|adesso|ora|subito|"
               r"per sempre|grazie|completamente|del tutto)$)"),
    "cue": r"\s*(?:dalla\s+(?:tua|sua)\s+memoria|dalla memoria|dalle\s+tue\s+note|da plur)\b",
    "back": r"(?:questo|quello|ciò|questa cosa|quella cosa|tutto questo|tutto ciò)",
    "back_told": r"(?:(?:quello|ciò|quanto) che (?:ti )?ho (?:appena )?(?:detto|scritto|raccontato)|il mio ultimo messaggio)",
    "told": [
        (r"(?:quello|ciò|tutto quello|tutto ciò) che ti ho (?:detto|raccontato|scritto|confidato) (?:su|di|riguardo a|"
         r"riguardo|a proposito di|sul|sulla|sui|sulle|sullo) (?P<about>.+)"),
        r"tutto (?:quello|ciò) che sai (?:su|di|sul|sulla|sui|sulle) (?P<about>.+)",
        r"tutto (?:su|riguardo a|sul|sulla) (?P<about>.+)",
        r"(?:la|le|tutte le) (?:note?|informazion[ei]|dati|memori[ae]) (?:su|di|riguardo a|sul|sulla) (?P<about>.+)",
        r"tutto (?:quello|ciò) che ti ho (?:detto|raccontato)",
    ],
    "data": (r"(?:il mio|la mia|i miei|le mie|mio|mia|miei|mie)\s+(?:(?:vecchio|vecchia|attuale|nuovo|nuova)\s+)?"
             r"(?:indirizzo(?: email| e-mail)?|numero di telefono|numero di cellulare|telefono|cellulare|codice fiscale|"
             r"numero di previdenza sociale|previdenza sociale|data di nascita|compleanno|password|pin|stipendio|"
             r"reddito|e-?mail|iban|conto(?: corrente)?|carta di credito|numero della carta|passaporto|"
             r"numero di passaporto|nome|cognome|età|diagnosi|malattia|farmaci|medicine|peso|numero|religione)|"
             r"(?:dove|quando) (?:abito|vivo|lavoro|sono nato|sono nata)\b.*"),
    "own": r"^(?:il mio|la mia|i miei|le mie|mio|mia|miei|mie)\s+",
    "bulk": r"(?:tutto|me|tutto su di me|tutti i miei dati)",
    "idiom": r"^(?:di\b|che\b)",
    "topic": r"^(?:andiamo|passiamo|continuiamo|lascia|non importa|e|io|ora)\b",
    "that": r"che\s+(?P<x>(?:io|ho|sono|mio|mia|abito|lavoro)\b.+)",
}

_PT_PRE = (r"(?:(?:por favor|pfv|pf|você pode|voce pode|pode|poderia|podes|quero que você|quero que voce|quero que)"
           r"\s*,?\s*)*")
PT = {
    "asks": [
        ("forget", _LEAD["pt"] + _PT_PRE + r"(?P<v>esqueça|esquece|esqueçam|esquecer|esqueça-se de|se esqueça de)\b\s*"
                   r"(?P<obj>.*)"),
        ("erase", _LEAD["pt"] + _PT_PRE + r"(?P<v>apague|apaga|apagar|exclua|exclui|excluir|delete|deleta|deletar|"
                  r"remova|remove|remover|elimine|elimina|eliminar)\b\s*(?P<obj>.*)"),
        ("keep", _LEAD["pt"] + _PT_PRE + r"não\s+(?P<v>guarde|guarda|salve|salva|memorize|memoriza|lembre|lembra|"
                 r"armazene|armazena|registre|registra|grave|grava|anote|anota)\s+(?P<obj>.*)"),
        ("keep", _LEAD["pt"] + r"não quero que (?:você |voce )?(?P<v>guarde|salve|lembre|armazene|registre|memorize|"
                 r"grave)\s+(?P<obj>.*)"),
    ],
    "polite": (r"(?:^(?:por favor|pfv|pf)\s*,?\s*|\s*,?\s+(?:por favor|pfv|pf|também|agora|já|para sempre|obrigad[oa]|"
               r"completamente|de vez)$)"),
    "cue": r"\s*(?:da\s+(?:sua|tua)\s+memória|da memória|das\s+suas\s+notas|do plur)\b",
    "back": r"(?:isso|isto|aquilo|essa mensagem|tudo isso)",
    "back_told": (r"(?:o que eu (?:te |lhe )?(?:acabei de (?:dizer|escrever|contar)|disse|escrevi|contei)"
                  r"(?: agora| antes)?|minha última mensagem)"),
    "told": [
        r"(?:o|tudo o|tudo) que eu (?:te |lhe )?(?:disse|contei|falei|escrevi) (?:sobre|de|a respeito de|do|da) (?P<about>.+)",
        r"tudo (?:o )?que (?:você|voce|tu) (?:sabe|sabes|lembra|tem) (?:sobre|de) (?P<about>.+)",
        r"tudo sobre (?P<about>.+)",
        r"(?:a|as|todas as) (?:notas?|informaç(?:ão|ões)|dados|memórias?) (?:sobre|de) (?P<about>.+)",
        r"tudo (?:o )?que eu (?:te )?(?:disse|contei)",
    ],
    "data": (r"(?:o |a )?(?:meu|minha|meus|minhas)\s+(?:(?:antigo|antiga|atual|novo|nova|velho|velha)\s+)?"
             r"(?:endereço(?: de e-?mail)?|número de telefone|telefone|celular|número de celular|cpf|rg|"
             r"número da previdência|previdência social|número do seguro social|data de nascimento|aniversário|senha|"
             r"pin|salário|renda|e-?mail|conta bancária|número da conta|cartão de crédito|número do cartão|passaporte|"
             r"número do passaporte|nome|sobrenome|idade|diagnóstico|doença|remédios|medicamentos|peso|número|"
             r"religião)|(?:onde|quando) (?:eu )?(?:moro|trabalho|nasci)\b.*"),
    "own": r"^(?:o |a )?(?:meu|minha|meus|minhas)\s+",
    "bulk": r"(?:tudo|mim|tudo sobre mim|todos os meus dados)",
    "idiom": r"^(?:de\b|disso\b)",
    "topic": r"^(?:vamos|bora|seguindo|deixa|tanto faz|não importa|e|eu|agora)\b",
    "that": r"que\s+(?P<x>(?:eu|meu|minha|tenho|sou|estou|moro|trabalho)\b.+)",
}

_ZH_PRE = r"(?:请你?|麻烦你?|能不能|能否|可不可以|可以|你能不能|你能|你可以|帮我|请帮我|我希望你|我要你|我想让你|拜托你?|从你?的?记忆(?:里|中)?)*"
_ZH_END = r"(?:吧|掉|了|好吗|可以吗|好不好|谢谢)*[。！!？?]*$"
ZH = {
    "asks": [
        ("forget", _LEAD["zh"] + _ZH_PRE + r"把(?P<obj>.+?)(?P<v>忘掉|忘记|忘了)" + _ZH_END),
        ("erase", _LEAD["zh"] + _ZH_PRE + r"把(?P<obj>.+?)(?P<v>删除|删掉|删了|清除|抹掉|去掉|移除)" + _ZH_END),
        ("forget", _LEAD["zh"] + _ZH_PRE + r"(?P<v>忘掉|忘记|忘了)(?P<obj>.*)"),
        ("erase", _LEAD["zh"] + _ZH_PRE + r"(?P<v>删除|删掉|删了|清除|抹掉|去掉|移除)(?P<obj>.*)"),
        ("keep", _LEAD["zh"] + r"(?:请)?(?:别|不要|不用|请勿|千万别|千万不要)(?:再)?(?P<v>记住|记下|记录|记|保存|存储|存下|"
                 r"存|保留)(?P<obj>.*)"),
    ],
    "polite": r"(?:^(?:请|麻烦)|(?:吧|了|哦|啊|呢|好吗|可以吗|好不好|谢谢|掉)$)",
    "cue": r"(?:从(?:你的)?(?:记忆|内存|笔记)(?:里|中)?|在(?:你的)?记忆(?:里|中))",
    "back": r"(?:这个|那个|这些|那些|这件事|那件事|这句话|那句话)",
    "back_told": (r"(?:我?刚才?(?:说|讲|写|告诉你)的(?:话|内容|事|那句话?)?|我?刚刚(?:说|讲|写|告诉你)的(?:话|内容|事)?|"
                  r"我(?:跟你|和你|对你)?(?:说|讲|告诉你)(?:过)?的(?:话|内容|事)?|上一条(?:消息)?|我上一条消息)"),
    "told": [
        (r"我(?:跟你|和你|对你|给你)?(?:说|讲|提到|提起|告诉你|透露)(?:过)?的(?:关于|有关)?(?P<about>.+?)"
         r"(?:的(?:事情?|内容|信息|话))?"),
        r"(?:关于|有关)(?P<about>.+?)的(?:一切|所有|事情?|内容|信息|记忆|笔记)",
        r"你(?:知道|记得)的(?:关于|有关)?(?P<about>.+?)的(?:一切|所有|事情?|内容|信息)",
    ],
    "data": (r"我的(?:旧|以前的|现在的|新)?(?:家庭?地址|住址|地址|电话号码|电话|手机号码?|手机|身份证号码?|身份证|社保号码?|"
             r"社会保障号码?|社会安全号码?|生日|出生日期|密码|工资|薪水|收入|邮箱|电子邮件|银行卡号?|银行账号|信用卡号?|"
             r"护照号码?|护照|名字|姓名|年龄|病情|病史|诊断|体重|宗教)|我(?:住在|住哪|在哪工作).*"),
    "own": r"^我的",
    "bulk": r"(?:一切|所有|全部|关于我的一切|我的所有(?:信息|数据))",
    "idiom": r"^(?:它|吧)",
    "topic": r"^(?:我们|咱们|继续|算了|不管|先|接着)",
}

_JA_END = r"(?:ください|下さい|くれ|くれる|くれますか|くれません?か|ほしい|欲しい|もらえますか|もらえる|ね|よ|な)?[。！!？?]*$"
_JA_OBJ = r"(?:どうか|お願い(?:だから)?|すみません)?[、,]?(?P<obj>.+?)(?:を|は|も)?"
JA = {
    "asks": [
        ("forget", _LEAD["ja"] + _JA_OBJ + r"(?P<v>忘れて)" + _JA_END),
        ("erase", _LEAD["ja"] + _JA_OBJ + r"(?P<v>削除して|消して|消去して)" + _JA_END),
        ("keep", _LEAD["ja"] + _JA_OBJ + r"(?P<v>覚えないで|記憶しないで|保存しないで|記録しないで|覚えておかないで|"
                 r"残さないで|メモしないで)" + _JA_END),
    ],
    "polite": r"(?:^(?:どうか|お願い|すみません)[、,]?|(?:を|は|も)$)",
    "cue": r"(?:(?:あなたの)?記憶から|メモリから)",
    "back": r"(?:それ|これ|あれ|今の|さっきの|今のこと|さっきのこと|さっきの話|今の話)",
    "back_told": (r"(?:(?:さっき|今|先ほど)(?:私が)?(?:言った|話した|書いた)(?:こと|内容|話)?|"
                  r"私が(?:さっき|今)(?:言った|話した)(?:こと)?)"),
    "told": [
        r"(?P<about>.+?)(?:について|に関して|のことで)(?:私が)?(?:話した|言った|教えた|伝えた)(?:こと|内容|話)?",
        r"(?P<about>.+?)(?:について|に関する|に関して)の?(?:こと|情報|記憶|メモ)(?:は|を)?(?:全部|すべて)?",
        r"(?P<about>.+?)のこと(?:は|を)?(?:全部|すべて)?",
    ],
    "data": (r"(?:私|僕|俺|わたし|ぼく)の(?:古い|前の|今の|新しい)?(?:住所|電話番号|携帯番号|携帯|マイナンバー|社会保障番号|"
             r"誕生日|生年月日|パスワード|暗証番号|給料|年収|収入|メールアドレス|メアド|口座番号|クレジットカード番号?|"
             r"パスポート番号?|名前|本名|年齢|病気|病歴|診断|体重|宗教)"),
    "own": r"^(?:私|僕|俺|わたし|ぼく)の",
    "bulk": r"(?:全部|すべて|私のこと全部|私についてのすべて|私のこと)",
    "idiom": r"^$",
    "topic": r"^$",
}

#: Every language's table, in the order they are tried (English first: most turns are English).
TABLES: dict[str, dict[str, object]] = {"en": EN, "de": DE, "fr": FR, "es": ES, "it": IT, "pt": PT, "zh": ZH, "ja": JA}
