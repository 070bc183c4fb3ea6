"""placeholder until the offline datasets land"""
