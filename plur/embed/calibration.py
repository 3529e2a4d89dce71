"""Calibration texts for the int8 graph's smoothing (:mod:`plur.embed.int8_graph`): 48 sentences of the kinds
plur embeds (conversation turns with and without a speaker, preferences, plans, dates, code and error messages,
very short replies, accented text). Written for this project; no data set's text. Each is run alone (no
padding) through the float32 graph to find every product input's per-channel range; 48 of them calibrate as
well as 400 real document chunks did (cosine to float32 mean 0.9979 against 0.9977).
"""

from __future__ import annotations

#: The calibration sentences (order does not matter: the per-channel maximum over all of them is used).
TEXTS: tuple[str, ...] = (
    "Priya: I went to the pottery class yesterday and made my first bowl.",
    "Tom: That's great! I repaired my old bike over the weekend.",
    "The user's dog is called Rex and he loves the beach.",
    "My sister Mia moved to Lisbon in May 2023 for a new job.",
    "I prefer dark mode in every editor, and tabs set to four spaces.",
    "Project atlas uses PostgreSQL 16 with pgvector for the embeddings.",
    "Deploys go through staging first, then production on Thursdays after 2 pm.",
    "Can you remind me what time the dentist appointment is on Friday?",
    "We booked a flight to Tokyo for the 14th of October; the hotel is near Shinjuku station.",
    "The CI pipeline failed because the lockfile was out of date; run npm ci again.",
    "I've been training for a half marathon and my best 10k time is 48 minutes.",
    "Assistant: Here are three vegetarian recipes that take under thirty minutes.",
    "What did I say about the budget for the kitchen renovation last month?",
    "She adopted two cats from the shelter, named Luna and Oliver.",
    "Our quarterly revenue grew by 12% while costs stayed flat.",
    "Please summarise the meeting notes from Tuesday and list the action items.",
    "I'm allergic to peanuts, so please avoid recipes with nuts.",
    "The kids start school on September 4th and the bus comes at 7:45.",
    "Hey! Long time no see, how was the camping trip with your family?",
    "The error says: ModuleNotFoundError: No module named 'yaml' -- install PyYAML.",
    "My grandmother taught me to bake bread when I was seven years old.",
    "We decided to use BM25 with k1 = 1.2 and b = 0.75 for the keyword leg.",
    "I'm thinking about switching careers from accounting to user experience design.",
    "The concert was amazing, they played all the songs from the new album!",
    "Remember that my wife's birthday is on March 3rd; she likes orchids.",
    "He fixed the leaking faucet in the bathroom with a new washer.",
    "Ana: I finally finished the quarterly tax forms, what a relief.",
    "Lee: Our team switched the build from Make to Bazel last sprint.",
    "The report is due next Monday; I still need the figures from finance.",
    "Can you recommend a good book about the history of the Roman Empire?",
    "I volunteer at the animal shelter every Saturday morning.",
    "The API returns 429 Too Many Requests when we exceed 100 calls per minute.",
    "ok",
    "thanks!",
    "Yes, exactly.",
    "I moved from Chicago to Denver three years ago and I love the mountains.",
    "My favourite food is spicy ramen, and I cook it every Sunday.",
    "The meeting with the investors went well; they want a follow-up in two weeks.",
    "Could you translate 'good morning, how are you?' into Spanish and French?",
    "Ünïcödé café — naïve 東京 and emoji-free text with accents: São Paulo, Zürich.",
    "We hiked 15 miles through the canyon and camped under the stars.",
    "I started learning the piano in January and can now play two Chopin pieces.",
    "The landlord raised the rent by $150, so we are looking at other apartments.",
    "Assistant: Sure! Here's a step-by-step plan: 1) gather data, 2) clean it, 3) train the model.",
    "My son scored the winning goal in his soccer game on Saturday.",
    "I get migraines when I don't sleep enough, usually after late nights at work.",
    "The new policy requires two-factor authentication for every admin account.",
    "We're planning a road trip along the coast of California next summer.",
)

__all__ = ["TEXTS"]
