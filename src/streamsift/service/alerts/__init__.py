"""Alerts: rules judged from the service's statuses (rules.py), episodes kept in the
service's database (episodes.py), what a notice says (notices.py), the channels that carry
it (channels.py) and their queues (delivery.py), and the thread that watches (watch.py)."""
