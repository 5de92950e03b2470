return settle_many(KEYS[1], KEYS[2], ARGV)
