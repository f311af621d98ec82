"""Telling the winners and the floor: winner events read from the audit trail, PA
announcements, SMS texts, the SMS outbox and gateway, and printable prize letters."""
