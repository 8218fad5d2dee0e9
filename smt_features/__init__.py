"""The upper floor: the phrase-based system (Moses formats) and the neural features on it, in rooms by stage."""
