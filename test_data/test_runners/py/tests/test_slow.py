import time


def test_sleeps():
    time.sleep(6151)
