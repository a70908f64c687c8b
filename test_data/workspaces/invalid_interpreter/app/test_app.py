def test_app():
    pass
