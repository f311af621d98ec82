"""The player's side: what a member sees at an eHost kiosk or in the casino's app, the
receipts a kiosk prints (numbered, with a MAC the crew can check at a claim), members'
kiosk PINs and their lockout.

- `receipt` (pure): the receipt model, its MAC, its short code and QR payload, and the
  check of a presented code;
- `receipttext` (pure): a receipt as the lines an 80 mm printer prints;
- `printer`: those lines through python-escpos to a file, a network printer or a device;
- `playerview` (pure): a member's standing in every running draw, in plain words;
- `store` and `desk`: kiosk visits and receipts in Redis.
"""
