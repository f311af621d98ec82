"""Telling winners and the floor: winner events, PA texts, SMS and prize letters."""
